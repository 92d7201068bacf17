"""Bypass an equation with an earlier value of another shape: a scalar result becomes the sum of
that value, any other result its reshape when the sizes agree, so that the chain between them (a
slice, a gather, an inner call, a squeeze …) goes. `bypass-equations` handles same-shaped values;
this one reaches past shape-changing equations, nearest values first."""
from __future__ import annotations

from typing import Iterator

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.model import INEXACT, Equation, Jaxpr, Spec, Var, names
from reducer.levels.jaxpr.passes._edit import JaxprPass, edit, finish, real_eqns

NEAREST = 3  # earlier values tried per equation
SUMMABLE = (*INEXACT, "int", "uint")


def collapse(src: Var, out: Var) -> Equation | None:
    """An equation making `out` from the value `src`: a sum over all axes when `out` is a scalar, a
    reshape when the sizes agree; None otherwise."""
    if src.dtype != out.dtype or src.shape == out.shape:
        return None
    if not out.shape and src.shape and src.dtype.startswith(SUMMABLE):
        return Equation("reduce_sum", [src.name], [out],
                        {"axes": {"t": list(range(len(src.shape)))}, "out_sharding": None})
    if jp.elements(src.shape) == jp.elements(out.shape):
        return Equation("reshape", [src.name], [out],
                        {"new_sizes": {"t": list(out.shape)}, "dimensions": None, "sharding": None})
    return None


def replacements(j: Jaxpr, i: int) -> Iterator[Equation]:
    """Equations that could stand for equation `i` of `j`, from the values defined before it (not
    its own operands: collapsing those removes nothing), nearest first."""
    e = j.eqns[i]
    if len(e.outputs) != 1:
        return
    earlier = list(j.inputs) + [o for prev in j.eqns[:i] for o in prev.outputs]
    own = set(names(e.inputs))
    found = 0
    for src in reversed(earlier):
        if found >= NEAREST:
            return
        new = None if src.name in own else collapse(src, e.outputs[0])
        if new is not None:
            found += 1
            yield new


class ReshapeBypass(JaxprPass):
    name = "reshape-bypass"

    def points(self, spec: Spec) -> list:
        return [(path, i, k) for path, j in list(spec.jaxpr.walk())
                for i in reversed(real_eqns(j)) for k, _ in enumerate(replacements(j, i))]

    def apply(self, spec: Spec, point) -> str | None:
        path, i, k = point
        new, target, _ = edit(spec, path, i)
        options = list(replacements(target, i))
        if k >= len(options):
            return None
        target.eqns[i] = options[k]
        return finish(new, spec)
