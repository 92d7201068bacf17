"""Drop a transformation from the chain applied to the traced function (an outer `jit`, a
`vmap`, …), outermost first; the oracle keeps those the failure needs."""
from __future__ import annotations

from typing import Iterator

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import clone, finish


class DropTransforms:
    name = "drop-transforms"

    def candidates(self, program: str) -> Iterator[str]:
        spec = jp.loads(program)
        for k, t in enumerate(spec["transforms"]):
            new = clone(spec)
            if t["t"] == "vmap":  # the arguments lose their batch axes
                for a, ax in zip(new["args"], t["in_axes"]):
                    if ax is not None:
                        del a["shape"][ax % len(a["shape"])]
                        a.pop("values", None)
            del new["transforms"][k]
            yield finish(new)
