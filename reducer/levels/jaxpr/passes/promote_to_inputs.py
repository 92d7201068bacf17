"""Cut the program: the outputs of a run of top-level equations become new inputs, so that
everything computing them goes. A new input takes the values its variable had in the captured call
where they were recorded (`reducer.levels.jaxpr.program.recorded`: a value failure needs them, a
padded slot's zero, an overflowing logit), else ones. A cut that leaves no differentiated input
read differentiates with respect to what it made inputs: the gradient at the cut."""
from __future__ import annotations

from reducer.engine import Chunks
from reducer.levels.jaxpr.model import INEXACT, Arg, Spec
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish, real_eqns, recorded_values


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
        first = len(j.inputs)
        j.inputs += promoted
        new.args += [Arg(o.shape, o.dtype, recorded_values(self.recorded, o)) for o in promoted]
        for t in new.transforms:
            if t.kind == "vmap":
                t.in_axes += [None] * len(promoted)
        if self.recorded:
            self._at_the_cut(new, first)
        return finish(new, spec)

    @staticmethod
    def _at_the_cut(spec: Spec, first: int) -> None:
        """Differentiate with respect to the new floating inputs (from position `first`) where the
        cut left none of the differentiated ones read."""
        spec.jaxpr.dce()
        read = spec.jaxpr.uses()
        cut = [k for k in range(first, len(spec.jaxpr.inputs))
               if spec.jaxpr.inputs[k].name in read and spec.args[k].dtype.startswith(INEXACT)]
        for t in spec.transforms:
            if t.argnums and cut and not any(spec.jaxpr.inputs[k].name in read for k in t.argnums):
                t.argnums = list(cut)
