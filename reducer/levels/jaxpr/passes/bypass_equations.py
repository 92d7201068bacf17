"""Make an equation's users read an earlier value of the same shape and dtype instead (each of its
own operands first, then the nearest inputs), so that the equation, and what fed only it, go."""
from __future__ import annotations

from typing import Iterator

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish, real_eqns

OTHERS = 2  # values tried besides the equation's own operands


class BypassEquations(JaxprPass):
    name = "bypass-equations"

    def points(self, spec: dict) -> list:
        return [(path, mapping) for path, j in list(jp.jaxprs(spec["jaxpr"]))
                for i in reversed(real_eqns(j)) for mapping in self.mappings(j, i)]

    def apply(self, spec: dict, point) -> str:
        path, mapping = point
        new = clone(spec)
        jp.rename(jp.at(new["jaxpr"], path), mapping)
        return finish(new, spec)

    @staticmethod
    def mappings(j: dict, i: int) -> Iterator[dict]:
        e = j["eqns"][i]
        avals = {v[0]: (v[1], v[2]) for v in j["in"]}
        for prev in j["eqns"][:i]:
            avals.update((o[0], (o[1], o[2])) for o in prev["out"])
        own = [a for a in e["in"] if isinstance(a, str)]
        if len(e["out"]) == 1:
            o = e["out"][0]
            same = [n for n in dict.fromkeys(own + list(avals)) if avals[n] == (o[1], o[2])]
            mine = [n for n in same if n in own]
            for n in mine + [n for n in same if n not in own][:OTHERS]:
                yield {o[0]: n}
            return
        mapping = {}
        for o in e["out"]:
            same = next((n for n in dict.fromkeys(own + list(avals)) if avals[n] == (o[1], o[2])), None)
            if same is None:
                return
            mapping[o[0]] = same
        yield mapping
