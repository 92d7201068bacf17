"""Make arrays scalars: first every array of the jaxpr (each input keeping its first value, then,
when that loses the failure, the value at the position most likely to make it: a non-finite one,
a zero, the largest in magnitude, one position for the inputs of one shape so that a padded slot's
zero keeps its mask; then other positions in turn, the most telling first), then only the arrays of
one element (what `shrink-dims` leaves). The shape parameters that build them (`shape`, `new_sizes`,
a scalar's `broadcast_dimensions`) follow, and a reduction of what is now a scalar goes, as does an
indexing of it (`gather`, `slice`), its users reading the scalar itself. A wrong derivative
isolated on fresh inputs and summed (`isolate-equation`) then comes back as the operation at one
point: `jax.grad(enzyme_jax_ir()(lax.digamma))(1.5)`, with no sum (or squeeze) for the source level to
peel off.
Where the jaxpr needs its shapes (a matrix product, an axis parameter) the replay fails and the
candidate is not kept."""
from __future__ import annotations

from dataclasses import replace

from reducer.levels.jaxpr.model import Jaxpr, Spec, names
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish

REDUCTIONS = {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or"}
#: what a scalar input passes through unchanged once its output is a scalar too
PASS_THROUGH = REDUCTIONS | {"squeeze", "expand_dims", "transpose", "reshape", "broadcast_in_dim"}
#: what picks elements of its first input by the others (indices): of a scalar, that scalar
INDEXING = {"gather", "dynamic_slice", "slice"}
#: the recorded arrays are also cut at other positions in turn, this many at most, the most telling
#: first (a `log` of the one `exp` that underflowed, picked by a `gather` the telling value does not
#: know of; a label's 0 beside the logit that overflows)
MAX_POSITIONS = 12
MAX_SCANNED = 1 << 16
SHAPE_PARAMS = ("shape", "new_sizes")


def _unit(shape) -> bool:
    return bool(shape) and all(d == 1 for d in shape)


def _array(shape) -> bool:
    return bool(shape)


def _rank(v) -> int:
    """How telling a recorded value is: a non-finite one, then a zero, then any other number."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return 0
    return 3 if v != v or v in (float("inf"), float("-inf")) else 2 if v == 0 else 1


def telling_index(values: list) -> int:
    """The position of the value most likely to make a value failure: the first non-finite one,
    else the first zero, else the largest in magnitude."""
    best = max(_rank(v) for v in values)
    if best == 1:
        return max(range(len(values)), key=lambda k: abs(values[k]) if _rank(values[k]) else -1)
    return next(k for k, v in enumerate(values) if _rank(v) == best)


def telling_positions(args) -> dict:
    """For each shape of the recorded inputs, the one position the arrays of that shape are cut at:
    that of the most telling value among them, so that a mask and the values it masks stay paired
    (a padded slot's `False` with its `0.0`)."""
    found: dict = {}
    for a in args:
        if a.values and len(a.values) > 1 and not any(isinstance(v, list) for v in a.values):
            k = telling_index(a.values)
            rank = _rank(a.values[k])
            if rank > found.get(tuple(a.shape), (-1, 0))[0]:
                found[tuple(a.shape)] = (rank, k)
    return {shape: k for shape, (_, k) in found.items()}


def _recorded(args) -> list:
    return [a for a in args if a.values and len(a.values) > 1 and not any(isinstance(v, list) for v in a.values)]


def positions(args) -> list[int]:
    """The positions to cut the recorded arrays at in turn: one for each tuple of values the largest
    ones hold there, the most telling first (by the ranks of those values, then their largest
    magnitude), at most `MAX_POSITIONS`."""
    recorded = _recorded(args)
    n = max((len(a.values) for a in recorded), default=0)
    if n > MAX_SCANNED:
        return []
    same = [a.values for a in recorded if len(a.values) == n]
    firsts = {}
    for k in range(n):
        firsts.setdefault(tuple(values[k] for values in same), k)

    def telling(k: int) -> tuple:
        at = [values[k] for values in same]
        return -sum(_rank(v) for v in at), -max((abs(v) for v in at if _rank(v) == 1), default=0)

    return sorted(firsts.values(), key=telling)[:MAX_POSITIONS]


def _at(args, k: int) -> dict:
    """Every recorded array's shape cut at position `k`, where it has one."""
    return {tuple(a.shape): k for a in _recorded(args) if k < len(a.values)}


class OnePoint(JaxprPass):
    name = "one-point"

    def points(self, spec: Spec) -> list:
        shapes = [a.shape for a in spec.args]
        shapes += [o.shape for _, j in spec.jaxpr.walk() for e in j.eqns for o in e.outputs]
        points = ["every array"] if any(_array(s) for s in shapes) else []
        if points and any(telling_positions(spec.args).values()):
            points.append("every array, at its telling value")
        told = set(telling_positions(spec.args).values()) | {0}
        points += [f"every array, at position {k}" for k in positions(spec.args) if k not in told]
        if any(_unit(s) for s in shapes) and not all(_unit(s) for s in shapes if s):
            points.append("one-element arrays")
        return points

    def apply(self, spec: Spec, point) -> str:
        which = _unit if point == "one-element arrays" else _array
        at = telling_positions(spec.args) if point.endswith("telling value") else \
            _at(spec.args, int(point.rpartition(" ")[2])) if "position" in point else {}
        new = clone(spec)
        for a in new.args:
            if which(a.shape):
                k = at.get(tuple(a.shape), 0)
                a.shape = ()
                if a.values and not a.dtype.startswith("complex"):
                    a.values = [a.values[k]]
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
            first_scalar = bool(e.inputs) and isinstance(e.inputs[0], str) and rank.get(e.inputs[0]) == 0
            through = e.primitive in PASS_THROUGH and len(e.inputs) == 1 and scalar_in or \
                e.primitive in INDEXING and first_scalar
            if through and len(e.outputs) == 1 and not scalar(e.outputs[0]).shape:
                mapping[e.outputs[0].name] = e.inputs[0]  # the sum (or squeeze) of a scalar is that scalar
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
