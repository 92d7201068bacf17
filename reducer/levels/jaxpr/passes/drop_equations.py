"""Replace runs of equations by constant arrays (ones; False for booleans) of their outputs' shapes,
latest first, halves before quarters before single equations; what fed only them goes too. Works
inside nested jaxprs (loop bodies, branches, inner calls) as well."""
from __future__ import annotations

from reducer.engine import Chunks
from reducer.levels.jaxpr.model import Spec
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, fill, finish, real_eqns


class DropEquations(JaxprPass):
    name = "drop-equations"

    def points(self, spec: Spec) -> list:
        return [Chunks((path, tuple(real_eqns(j))), len(real_eqns(j)), from_end=True)
                for path, j in list(spec.jaxpr.walk())]

    def apply(self, spec: Spec, chunk) -> str:
        path, idx = chunk.where
        chosen = set(idx[chunk.start:chunk.stop])
        new = clone(spec)
        target = new.jaxpr.at(path)
        eqns = target.eqns
        target.eqns = ([fill(o) for i in sorted(chosen) for o in eqns[i].outputs]
                       + [e for i, e in enumerate(eqns) if i not in chosen])
        return finish(new, spec)
