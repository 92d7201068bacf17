"""Replace runs of equations by constant arrays (ones; False for booleans) of their outputs' shapes,
latest first, halves before quarters before single equations; what fed only them goes too. Works
inside nested jaxprs (loop bodies, branches, inner calls) as well."""
from __future__ import annotations

from typing import Iterator

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import chunks, clone, fill, finish, real_eqns


class DropEquations:
    name = "drop-equations"

    def candidates(self, program: str) -> Iterator[str]:
        spec = jp.loads(program)
        for path, j in list(jp.jaxprs(spec["jaxpr"])):
            idx = real_eqns(j)
            for part in chunks(len(idx)):
                chosen = {idx[k] for k in part}
                new = clone(spec)
                target = jp.at(new["jaxpr"], path)
                eqns = target["eqns"]
                target["eqns"] = ([fill(o) for i in sorted(chosen) for o in eqns[i]["out"]]
                                  + [e for i, e in enumerate(eqns) if i not in chosen])
                yield finish(new)
