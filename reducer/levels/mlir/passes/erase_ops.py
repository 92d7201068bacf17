"""Erase operations, putting something else where their results were used: one of the operation's
own operands of the same type (bypass it), a new function argument, a zero or one splat constant,
or another value in scope of the same type. What only fed the erased operation dies with it.
Operations are tried in order of how much dies with them (the dataflow graph says), largest first.
A change point is (operation position, what replaces its results).
"""
from __future__ import annotations

from reducer.levels.mlir import module as mm
from reducer.levels.mlir import ir_tools
from reducer.passes import ReductionPass


def _used(value) -> bool:
    return any(True for _ in value.uses)


def choices(item: ir_tools.Item, op, signatures: dict) -> list[tuple]:
    """What may replace `op`'s results, best first (`signatures`: whether a function's signature
    may change, by function, filled as it is asked). A value in scope is checked when applied."""
    used = [r for r in op.results if _used(r)]
    if not used:
        return [("nothing",)]
    found = [("operand", k) for k, v in enumerate(op.operands) if all(v.type == r.type for r in used)]
    f = ir_tools.function_of(op)
    if f is not None:
        name = ir_tools.func_name(f)
        if name not in signatures:
            signatures[name] = item.can_change_signature(f)
        if signatures[name]:
            found.append(("argument",))
    if op.name != "stablehlo.constant":
        found += [("splat", 0.0), ("splat", 1.0)]
    return found + [("value",)]


def _other_value(op, result):
    """The nearest value in scope of `result`'s type that is not an operand of `op`."""
    for v in ir_tools.values_in_scope(op):
        if v.type == result.type and not any(v == o for o in op.operands):
            return v
    return None


def apply(e: ir_tools.Edit, op, choice: tuple) -> bool:
    for r in op.results:
        if not _used(r):
            continue
        kind = choice[0]
        if kind == "operand":
            v = op.operands[choice[1]]
        elif kind == "argument":
            v = e.add_argument(ir_tools.function_of(op), r.type)
        elif kind == "splat":
            v = ir_tools.splat_constant(r.type, choice[1], op)
        elif kind == "value":
            v = _other_value(op, r)
        else:
            v = None
        if v is None:
            return False
        r.replace_all_uses_with(v)
    op.erase()
    return True


class EraseOps(ReductionPass):
    name = "erase-ops"

    def points(self, item: ir_tools.Item) -> list[tuple]:
        targets = [i for i, op in enumerate(item.ops) if mm.counted(op)]
        dies = {i: item.flow.dies_with(item.ops[i]) for i in targets}
        signatures: dict = {}
        return [(i, choice) for i in sorted(targets, key=lambda i: -dies[i])
                for choice in choices(item, item.ops[i], signatures)]

    def apply(self, item: ir_tools.Item, point) -> str | None:
        i, choice = point
        with item.edit() as e:
            return e.text() if apply(e, e.ops[i], tuple(choice)) else None
