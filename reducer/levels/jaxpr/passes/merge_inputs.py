"""Read one input in place of another of the same shape and dtype, and drop the other.

Captured programs often take several same-typed arguments (a loop's initial value next to the
differentiated one, two data arrays) where one would do; the source level cannot merge parameters
of the written-back function. An input that a `grad`-like transformation differentiates stays
(its cotangent is part of the result); the one read instead must be mapped alike by every `vmap`."""
from __future__ import annotations

from reducer.levels.jaxpr.model import Spec
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish, remove_inputs


def _same_mapping(spec: Spec, k: int, m: int) -> bool:
    return all(t.in_axes[k] == t.in_axes[m] for t in spec.transforms if t.kind == "vmap")


class MergeInputs(JaxprPass):
    name = "merge-inputs"

    def points(self, spec: Spec) -> list:
        """(k, m): input k replaced by the first other input m of its type, later inputs first."""
        ins = spec.jaxpr.inputs
        differentiated = {k for t in spec.transforms for k in t.argnums or ()}
        out = []
        for k in reversed(range(len(ins))):
            same = (m for m in range(len(ins))
                    if m != k and ins[m].aval() == ins[k].aval() and _same_mapping(spec, k, m))
            m = next(same, None)
            if k not in differentiated and m is not None:
                out.append((k, m))
        return out

    def apply(self, spec: Spec, point) -> str:
        k, m = point
        ins = spec.jaxpr.inputs
        new = clone(spec)
        new.jaxpr.rename({ins[k].name: ins[m].name})
        remove_inputs(new, {k})
        return finish(new)
