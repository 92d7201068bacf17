"""Replace runs of equations by constant arrays (ones; False for booleans) of their outputs' shapes,
latest first, halves before quarters before single equations; what fed only them goes too. Works
inside nested jaxprs (loop bodies, branches, inner calls) as well."""
from __future__ import annotations

from reducer.engine import Chunks
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, fill, finish, real_eqns


class DropEquations(JaxprPass):
    name = "drop-equations"

    def points(self, spec: dict) -> list:
        return [Chunks((path, tuple(real_eqns(j))), len(real_eqns(j)), from_end=True)
                for path, j in list(jp.jaxprs(spec["jaxpr"]))]

    def apply(self, spec: dict, chunk) -> str:
        path, idx = chunk.where
        chosen = set(idx[chunk.start:chunk.stop])
        new = clone(spec)
        target = jp.at(new["jaxpr"], path)
        eqns = target["eqns"]
        target["eqns"] = ([fill(o) for i in sorted(chosen) for o in eqns[i]["out"]]
                          + [e for i, e in enumerate(eqns) if i not in chosen])
        return finish(new, spec)
