"""The jaxpr pass base and small edits the passes share: copies, splicing equations, constant fills."""
from __future__ import annotations

from typing import Iterator

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.model import Equation, Jaxpr, Spec, Var
from reducer.passes import ReductionPass


class JaxprPass(ReductionPass):
    """The base of every jaxpr pass: `points(spec)` lists what the pass can change in the parsed spec
    (a `reducer.levels.jaxpr.model.Spec`, which it never changes), in the order to try it;
    `apply(spec, point)` edits a `clone` of it and returns the candidate's text, or None. `recorded`:
    the values the captured call's top-level variables had (`program.recorded`), for a pass whose
    cuts must keep a value failure's values."""

    def __init__(self, recorded: dict | None = None):
        self.recorded = recorded or {}

    def parse(self, program: str) -> Spec:
        return jp.parse(program)


def fill(out: Var, value: int | None = None) -> Equation:
    """A constant array for the output `out`: ones (False for booleans, so that loops end)."""
    if value is None:
        value = 0 if out.dtype == "bool" else 1
    return Equation("__fill__", [], [out], {"fill": value})


def recorded_values(recorded: dict, var: Var) -> list | None:
    """The values `var` had in the captured call (`program.recorded`), where they were recorded."""
    values = recorded.get(var.name)
    return list(values) if values is not None and len(values) == jp.elements(var.shape) else None


def real_eqns(j: Jaxpr) -> list[int]:
    """Indices of the equations that count (not constants or fills)."""
    return [i for i, e in enumerate(j.eqns) if e.primitive not in jp.VALUE_PRIMS]


def finish(spec: Spec, before: Spec | None = None) -> str:
    """The candidate's text, with what no output needs gone; given the spec `before` the edit, the
    inputs the edit left unread go too (when some differentiated input stays)."""
    spec.jaxpr.dce()
    if before is not None:
        read = before.jaxpr.uses()
        left = spec.jaxpr.uses()
        gone = {k for k, v in enumerate(spec.jaxpr.inputs) if v.name in read and v.name not in left}
        keep_grads = all(set(t.argnums) - gone for t in spec.transforms if t.argnums)
        if gone and keep_grads and len(gone) < len(spec.jaxpr.inputs):
            remove_inputs(spec, gone)
    return spec.to_json()


def remove_inputs(spec: Spec, gone: set) -> None:
    """Remove the inputs at positions `gone` (with their arguments, grad positions and vmap axes)."""
    keep = [k for k in range(len(spec.args)) if k not in gone]
    where = {old: new for new, old in enumerate(keep)}
    spec.jaxpr.inputs = [spec.jaxpr.inputs[k] for k in keep]
    spec.args = [spec.args[k] for k in keep]
    for t in spec.transforms:
        if t.argnums is not None:
            t.argnums = [where[k] for k in t.argnums if k in where]
        if t.in_axes is not None:
            t.in_axes = [t.in_axes[k] for k in keep]


def clone(spec: Spec) -> Spec:
    return spec.clone()


def equations(spec: Spec, primitives) -> Iterator[tuple[tuple, int, Equation]]:
    """(path, index, equation) of every equation of one of `primitives`, in every jaxpr of `spec`."""
    for path, j in list(spec.jaxpr.walk()):
        for i, e in enumerate(j.eqns):
            if e.primitive in primitives:
                yield path, i, e


def edit(spec: Spec, path, i: int) -> tuple[Spec, Jaxpr, Equation]:
    """A copy of `spec` to make a candidate of, with its jaxpr at `path` and that jaxpr's equation `i`."""
    new = clone(spec)
    target = new.jaxpr.at(path)
    return new, target, target.eqns[i]


def splice(j: Jaxpr, i: int, body: list, out_map: dict) -> None:
    """Replace equation `i` of `j` by the equations `body`; uses of its outputs read `out_map`."""
    j.eqns[i:i + 1] = body
    j.rename(out_map)
