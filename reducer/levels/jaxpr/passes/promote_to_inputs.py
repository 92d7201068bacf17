"""Cut the program: the outputs of a run of top-level equations become new inputs (built as
ones), so that everything computing them goes."""
from __future__ import annotations

from reducer.engine import Chunks
from reducer.levels.jaxpr.model import Arg, Spec
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish, real_eqns


class PromoteToInputs(JaxprPass):
    name = "promote-to-inputs"

    def points(self, spec: Spec) -> list:
        idx = real_eqns(spec.jaxpr)
        return [Chunks(tuple(idx), len(idx), from_end=True)]

    def apply(self, spec: Spec, chunk) -> str:
        chosen = set(chunk.where[chunk.start:chunk.stop])
        new = clone(spec)
        j = new.jaxpr
        promoted = [o for i in sorted(chosen) for o in j.eqns[i].outputs]
        j.eqns = [e for i, e in enumerate(j.eqns) if i not in chosen]
        j.inputs += promoted
        new.args += [Arg(o.shape, o.dtype) for o in promoted]
        for t in new.transforms:
            if t.kind == "vmap":
                t.in_axes += [None] * len(promoted)
        return finish(new, spec)
