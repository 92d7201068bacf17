"""Drop a transformation from the chain applied to the traced function (an outer `jit`, a
`vmap`, …), outermost first; the oracle keeps those the failure needs."""
from __future__ import annotations

from reducer.levels.jaxpr.model import Spec
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish


class DropTransforms(JaxprPass):
    name = "drop-transforms"

    def points(self, spec: Spec) -> list:
        return list(range(len(spec.transforms)))

    def apply(self, spec: Spec, k) -> str:
        t = spec.transforms[k]
        new = clone(spec)
        if t.kind == "vmap":  # the arguments lose their batch axes
            for a, ax in zip(new.args, t.in_axes):
                if ax is not None:
                    at = ax % len(a.shape)
                    a.shape, a.values = a.shape[:at] + a.shape[at + 1:], None
        del new.transforms[k]
        return finish(new)
