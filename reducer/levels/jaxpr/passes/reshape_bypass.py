"""Bypass an equation with an earlier value of another shape: a scalar result becomes the sum of
that value, any other result its reshape when the sizes agree, so that the chain between them (a
slice, a gather, an inner call, a squeeze …) goes. `bypass-equations` handles same-shaped values;
this one reaches past shape-changing equations, nearest values first."""
from __future__ import annotations

from typing import Iterator

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import JaxprPass, edit, finish, real_eqns

NEAREST = 3  # earlier values tried per equation
SUMMABLE = ("float", "bfloat", "complex", "int", "uint")


def collapse(src: list, out: list) -> dict | None:
    """An equation making `out` from the value `src` ([var, shape, dtype]): a sum over all axes when
    `out` is a scalar, a reshape when the sizes agree; None otherwise."""
    name, shape, dtype = src
    if dtype != out[2] or list(shape) == list(out[1]):
        return None
    if not out[1] and shape and dtype.startswith(SUMMABLE):
        return {"p": "reduce_sum", "in": [name], "out": [list(out)],
                "params": {"axes": {"t": list(range(len(shape)))}, "out_sharding": None}, "subs": []}
    if jp.elements(shape) == jp.elements(out[1]):
        return {"p": "reshape", "in": [name], "out": [list(out)],
                "params": {"new_sizes": {"t": list(out[1])}, "dimensions": None, "sharding": None}, "subs": []}
    return None


def replacements(j: dict, i: int) -> Iterator[dict]:
    """Equations that could stand for equation `i` of `j`, from the values defined before it (not
    its own operands: collapsing those removes nothing), nearest first."""
    e = j["eqns"][i]
    if len(e["out"]) != 1:
        return
    earlier = [list(v) for v in j["in"]] + [list(o) for prev in j["eqns"][:i] for o in prev["out"]]
    own = {a for a in e["in"] if isinstance(a, str)}
    found = 0
    for src in reversed(earlier):
        if found >= NEAREST:
            return
        new = None if src[0] in own else collapse(src, e["out"][0])
        if new is not None:
            found += 1
            yield new


class ReshapeBypass(JaxprPass):
    name = "reshape-bypass"

    def points(self, spec: dict) -> list:
        return [(path, i, k) for path, j in list(jp.jaxprs(spec["jaxpr"]))
                for i in reversed(real_eqns(j)) for k, _ in enumerate(replacements(j, i))]

    def apply(self, spec: dict, point) -> str | None:
        path, i, k = point
        new, target, _ = edit(spec, path, i)
        options = list(replacements(target, i))
        if k >= len(options):
            return None
        target["eqns"][i] = options[k]
        return finish(new, spec)
