"""Drop outputs of the traced function (halves first, then one at a time)."""
from __future__ import annotations

from reducer.engine import chunk_order
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish


class DropOutputs(JaxprPass):
    name = "drop-outputs"

    def points(self, spec: dict) -> list:
        n = len(spec["jaxpr"]["out"])  # chunks of them, never all
        return [(start, stop) for start, stop in chunk_order(n, from_end=True) if stop - start < n]

    def apply(self, spec: dict, point) -> str:
        start, stop = point
        new = clone(spec)
        new["jaxpr"]["out"] = new["jaxpr"]["out"][:start] + new["jaxpr"]["out"][stop:]
        return finish(new)
