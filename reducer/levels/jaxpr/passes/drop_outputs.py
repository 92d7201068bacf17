"""Drop outputs of the traced function (halves first, then one at a time)."""
from __future__ import annotations

from reducer.engine import chunk_order
from reducer.levels.jaxpr.model import Spec
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish


class DropOutputs(JaxprPass):
    name = "drop-outputs"

    def points(self, spec: Spec) -> list:
        n = len(spec.jaxpr.outputs)  # chunks of them, never all
        return [(start, stop) for start, stop in chunk_order(n, from_end=True) if stop - start < n]

    def apply(self, spec: Spec, point) -> str:
        start, stop = point
        new = clone(spec)
        new.jaxpr.outputs = new.jaxpr.outputs[:start] + new.jaxpr.outputs[stop:]
        return finish(new)
