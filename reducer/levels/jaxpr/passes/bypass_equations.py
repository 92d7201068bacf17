"""Make an equation's users read an earlier value of the same shape and dtype instead (each of its
own operands first, then the nearest inputs), so that the equation, and what fed only it, go."""
from __future__ import annotations

from typing import Iterator

from reducer.levels.jaxpr.model import Jaxpr, Spec, names
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish, real_eqns

OTHERS = 2  # values tried besides the equation's own operands


class BypassEquations(JaxprPass):
    name = "bypass-equations"

    def points(self, spec: Spec) -> list:
        return [(path, mapping) for path, j in list(spec.jaxpr.walk())
                for i in reversed(real_eqns(j)) for mapping in self.mappings(j, i)]

    def apply(self, spec: Spec, point) -> str:
        path, mapping = point
        new = clone(spec)
        new.jaxpr.at(path).rename(mapping)
        return finish(new, spec)

    @staticmethod
    def mappings(j: Jaxpr, i: int) -> Iterator[dict]:
        e = j.eqns[i]
        avals = {v.name: v.aval() for v in j.inputs}
        for prev in j.eqns[:i]:
            avals.update((o.name, o.aval()) for o in prev.outputs)
        own = names(e.inputs)
        if len(e.outputs) == 1:
            o = e.outputs[0]
            same = [n for n in dict.fromkeys(own + list(avals)) if avals[n] == o.aval()]
            mine = [n for n in same if n in own]
            for n in mine + [n for n in same if n not in own][:OTHERS]:
                yield {o.name: n}
            return
        mapping = {}
        for o in e.outputs:
            same = next((n for n in dict.fromkeys(own + list(avals)) if avals[n] == o.aval()), None)
            if same is None:
                return
            mapping[o.name] = same
        yield mapping
