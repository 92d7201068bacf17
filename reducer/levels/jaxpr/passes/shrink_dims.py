"""Shrink a dimension size everywhere it occurs: every axis of that size, in every shape and in
the shape-like parameters (`shape`, `new_sizes`, `sizes`, `limit_indices`, `slice_sizes`,
`length`), becomes 1, or 2 when 1 does not keep the failure. Largest sizes first."""
from __future__ import annotations

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish

SHAPE_PARAMS = {"shape", "new_sizes", "sizes", "limit_indices", "slice_sizes", "length"}


def _sub_tuple(v, old: int, new: int):
    if isinstance(v, dict) and "t" in v:
        return {"t": [new if x == old else _sub_tuple(x, old, new) for x in v["t"]]}
    if isinstance(v, int) and not isinstance(v, bool) and v == old:
        return new
    return v


def substitute(spec: dict, old: int, new: int) -> None:
    def shape(s):
        return [new if d == old else d for d in s]

    for a in spec["args"]:
        if old in a["shape"]:
            a["shape"] = shape(a["shape"])
            a.pop("values", None)
    for _, j in jp.jaxprs(spec["jaxpr"]):
        for v in j["in"]:
            v[1] = shape(v[1])
        for e in j["eqns"]:
            for o in e["out"]:
                if old in o[1] and e["p"] == "__const__":
                    e["p"], e["params"] = "__fill__", {"fill": 1}
                o[1] = shape(o[1])
            for k in list(e["params"]):
                if k in SHAPE_PARAMS:
                    e["params"][k] = _sub_tuple(e["params"][k], old, new)


def sizes(spec: dict) -> list[int]:
    found = set()
    for a in spec["args"]:
        found.update(a["shape"])
    for _, j in jp.jaxprs(spec["jaxpr"]):
        for e in j["eqns"]:
            for o in e["out"]:
                found.update(o[1])
    return sorted((d for d in found if d > 2), reverse=True)


class ShrinkDims(JaxprPass):
    name = "shrink-dims"

    def points(self, spec: dict) -> list:
        return [(old, new_size) for old in sizes(spec) for new_size in (1, 2)]

    def apply(self, spec: dict, point) -> str:
        old, new_size = point
        new = clone(spec)
        substitute(new, old, new_size)
        return finish(new)
