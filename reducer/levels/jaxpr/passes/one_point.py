"""Make arrays scalars: first every array of the jaxpr (each input keeping its first value), then,
when that loses the failure, only the arrays of one element (what `shrink-dims` leaves). The shape
parameters that build them (`shape`, `new_sizes`, a scalar's `broadcast_dimensions`) follow, and a
reduction of what is now a scalar goes, its users reading the scalar itself. A wrong derivative
isolated on fresh inputs and summed (`isolate-equation`) then comes back as the operation at one
point: `jax.grad(enzyme_jax_ir()(lax.digamma))(1.5)`, with no sum for the source level to peel off.
Where the jaxpr needs its shapes (a matrix product, an axis parameter) the replay fails and the
candidate is not kept."""
from __future__ import annotations

from dataclasses import replace

from reducer.levels.jaxpr.model import Jaxpr, Spec, names
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish

REDUCTIONS = {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or"}
SHAPE_PARAMS = ("shape", "new_sizes")


def _unit(shape) -> bool:
    return bool(shape) and all(d == 1 for d in shape)


def _array(shape) -> bool:
    return bool(shape)


class OnePoint(JaxprPass):
    name = "one-point"

    def points(self, spec: Spec) -> list:
        shapes = [a.shape for a in spec.args]
        shapes += [o.shape for _, j in spec.jaxpr.walk() for e in j.eqns for o in e.outputs]
        points = ["every array"] if any(_array(s) for s in shapes) else []
        if any(_unit(s) for s in shapes) and not all(_unit(s) for s in shapes if s):
            points.append("one-element arrays")
        return points

    def apply(self, spec: Spec, point) -> str:
        which = _array if point == "every array" else _unit
        new = clone(spec)
        for a in new.args:
            if which(a.shape):
                a.shape = ()
                if a.values and not a.dtype.startswith("complex"):
                    a.values = a.values[:1]  # its first value
                else:  # ones
                    a.values = None
        for _, j in new.jaxpr.walk():
            self._scalars(j, which)
        return finish(new)

    @staticmethod
    def _scalars(j: Jaxpr, which) -> None:
        """Make `j`'s chosen shapes scalars, in place; reductions of a scalar go."""
        def scalar(v):
            return replace(v, shape=()) if which(v.shape) else v

        j.inputs = [scalar(v) for v in j.inputs]
        rank = {v.name: len(v.shape) for v in j.inputs}
        kept, mapping = [], {}
        for e in j.eqns:
            e.inputs = [mapping.get(a, a) if isinstance(a, str) else a for a in e.inputs]
            scalar_in = [a for a in names(e.inputs) if rank.get(a) == 0]
            if e.primitive in REDUCTIONS and len(e.inputs) == 1 and scalar_in and len(e.outputs) == 1:
                mapping[e.outputs[0].name] = e.inputs[0]  # the sum of a scalar is that scalar
                continue
            e.outputs = [scalar(o) for o in e.outputs]
            rank.update((o.name, len(o.shape)) for o in e.outputs)
            for k in SHAPE_PARAMS:
                value = e.params.get(k)
                items = value["t"] if isinstance(value, dict) and "t" in value else value  # an encoded tuple
                if isinstance(items, (list, tuple)) and which(list(items)):
                    e.params[k] = {"t": []}
            if e.primitive == "broadcast_in_dim" and scalar_in:
                e.params["broadcast_dimensions"] = {"t": []}
            kept.append(e)
        j.eqns = kept
        j.rename(mapping)
