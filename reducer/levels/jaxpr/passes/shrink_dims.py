"""Shrink a dimension size everywhere it occurs: every axis of that size, in every shape and in
the shape-like parameters (`shape`, `new_sizes`, `sizes`, `limit_indices`, `slice_sizes`,
`length`), becomes 1, or 2 when 1 does not keep the failure. Largest sizes first. An input's
recorded values are cut along with it, to the slice that holds the telling value of the inputs of
its shape (a zero in a padded slot with its mask, an overflowing feature: `one_point.telling_positions`),
so that what made a value failure stays."""
from __future__ import annotations

import math
from dataclasses import replace

from reducer.levels.jaxpr.model import Spec
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish
from reducer.levels.jaxpr.passes.one_point import telling_positions

SHAPE_PARAMS = {"shape", "new_sizes", "sizes", "limit_indices", "slice_sizes", "length"}


def _sub_tuple(v, old: int, new: int):
    """The encoded parameter `v` with `old` as `new` (in an encoded tuple, at any depth)."""
    if isinstance(v, dict) and "t" in v:
        return {"t": [new if x == old else _sub_tuple(x, old, new) for x in v["t"]]}
    if isinstance(v, int) and not isinstance(v, bool) and v == old:
        return new
    return v


def cut(values: list | None, shape: tuple, dtype: str, old: int, new: int, position: int = 0) -> list | None:
    """`values` (flat, of `shape`) with every axis of size `old` cut to `new` around the flat
    `position`; None (ones) where they are not plain numbers."""
    import numpy as np

    if not values or dtype.startswith("complex") or len(values) != math.prod(shape) or \
            any(isinstance(v, list) for v in values):
        return None
    arr = np.asarray(values, dtype=object).reshape(shape)
    at = np.unravel_index(position, shape)
    for axis, size in enumerate(shape):
        if size == old:
            start = min(int(at[axis]), old - new)
            arr = arr.take(range(start, start + new), axis=axis)
    return arr.ravel().tolist()


def substitute(spec: Spec, old: int, new: int) -> None:
    def shape(s) -> tuple:
        return tuple(new if d == old else d for d in s)

    positions = telling_positions(spec.args)
    for a in spec.args:
        if old in a.shape:
            a.values = cut(a.values, a.shape, a.dtype, old, new, positions.get(tuple(a.shape), 0))
            a.shape = shape(a.shape)
    for _, j in spec.jaxpr.walk():
        j.inputs = [replace(v, shape=shape(v.shape)) for v in j.inputs]
        for e in j.eqns:
            if e.primitive == "__const__" and any(old in o.shape for o in e.outputs):
                e.primitive, e.params = "__fill__", {"fill": 1}
            e.outputs = [replace(o, shape=shape(o.shape)) for o in e.outputs]
            for k in list(e.params):
                if k in SHAPE_PARAMS:
                    e.params[k] = _sub_tuple(e.params[k], old, new)


def sizes(spec: Spec) -> list[int]:
    found = set()
    for a in spec.args:
        found.update(a.shape)
    for _, j in spec.jaxpr.walk():
        for e in j.eqns:
            for o in e.outputs:
                found.update(o.shape)
    return sorted((d for d in found if d > 2), reverse=True)


class ShrinkDims(JaxprPass):
    name = "shrink-dims"

    def points(self, spec: Spec) -> list:
        return [(old, new_size) for old in sizes(spec) for new_size in (1, 2)]

    def apply(self, spec: Spec, point) -> str:
        old, new_size = point
        new = clone(spec)
        substitute(new, old, new_size)
        return finish(new)
