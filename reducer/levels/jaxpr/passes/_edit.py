"""The jaxpr pass base and small edits the passes share: copies, splicing equations, constant fills."""
from __future__ import annotations

import copy
from typing import Iterator

from reducer.levels.jaxpr import program as jp
from reducer.passes import ReductionPass


class JaxprPass(ReductionPass):
    """The base of every jaxpr pass: `points(spec)` lists what the pass can change in the parsed spec
    (which it never changes), in the order to try it; `apply(spec, point)` edits a `clone` of it
    and returns the candidate's text, or None."""

    def parse(self, program: str) -> dict:
        return jp.loads(program)


def fill(out: list, value: int | None = None) -> dict:
    """A constant array for the output `out`: ones (False for booleans, so that loops end)."""
    if value is None:
        value = 0 if out[2] == "bool" else 1
    return {"p": "__fill__", "in": [], "out": [list(out)], "params": {"fill": value}, "subs": []}


def real_eqns(j: dict) -> list[int]:
    """Indices of the equations that count (not constants or fills)."""
    return [i for i, e in enumerate(j["eqns"]) if e["p"] not in jp.VALUE_PRIMS]


def finish(spec: dict, before: dict | None = None) -> str:
    """The candidate's text, with what no output needs gone; given the spec `before` the edit, the
    inputs the edit left unread go too (when some differentiated input stays)."""
    jp.dce(spec["jaxpr"])
    if before is not None:
        read = jp.uses(before["jaxpr"])
        left = jp.uses(spec["jaxpr"])
        gone = {k for k, v in enumerate(spec["jaxpr"]["in"]) if v[0] in read and v[0] not in left}
        keep_grads = all(set(t["argnums"]) - gone for t in spec["transforms"] if t.get("argnums"))
        if gone and keep_grads and len(gone) < len(spec["jaxpr"]["in"]):
            remove_inputs(spec, gone)
    return jp.dumps(spec)


def remove_inputs(spec: dict, gone: set) -> None:
    """Remove the inputs at positions `gone` (with their arguments, grad positions and vmap axes)."""
    keep = [k for k in range(len(spec["args"])) if k not in gone]
    where = {old: new for new, old in enumerate(keep)}
    spec["jaxpr"]["in"] = [spec["jaxpr"]["in"][k] for k in keep]
    spec["args"] = [spec["args"][k] for k in keep]
    for t in spec["transforms"]:
        if "argnums" in t:
            t["argnums"] = [where[k] for k in t["argnums"] if k in where]
        if "in_axes" in t:
            t["in_axes"] = [t["in_axes"][k] for k in keep]


def clone(spec: dict) -> dict:
    return copy.deepcopy(spec)


def equations(spec: dict, primitives) -> Iterator[tuple[tuple, int, dict]]:
    """(path, index, equation) of every equation of one of `primitives`, in every jaxpr of `spec`."""
    for path, j in list(jp.jaxprs(spec["jaxpr"])):
        for i, e in enumerate(j["eqns"]):
            if e["p"] in primitives:
                yield path, i, e


def edit(spec: dict, path, i: int) -> tuple[dict, dict, dict]:
    """A copy of `spec` to make a candidate of, with its jaxpr at `path` and that jaxpr's equation `i`."""
    new = clone(spec)
    target = jp.at(new["jaxpr"], path)
    return new, target, target["eqns"][i]


def splice(j: dict, i: int, body: list, out_map: dict) -> None:
    """Replace equation `i` of `j` by the equations `body`; uses of its outputs read `out_map`."""
    j["eqns"][i:i + 1] = body
    jp.rename(j, out_map)
