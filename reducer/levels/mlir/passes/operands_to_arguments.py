"""Turn operands into new function arguments: cut the edge from the operation that computes an
operand, so that it (and what only fed it) dies. All operands of an operation at once first, then
one at a time; operations with the most behind them first. A change point is (operation position,
operand positions)."""
from __future__ import annotations

from reducer.levels.mlir import module as mm
from reducer.levels.mlir import ir_tools
from reducer.passes import ReductionPass


def cuttable(op) -> list[int]:
    """Positions of the operands of `op` computed by another operation, with a static type."""
    from jaxlib.mlir import ir

    return [k for k, v in enumerate(op.operands)
            if not isinstance(v.owner, ir.Block)
            and isinstance(v.type, ir.RankedTensorType) and v.type.has_static_shape]


class OperandsToArguments(ReductionPass):
    name = "operands-to-arguments"

    def points(self, item: ir_tools.Item) -> list[tuple]:
        targets = []
        for i, op in enumerate(item.ops):
            f = ir_tools.function_of(op)
            if not mm.counted(op) or f is None:
                continue
            positions = cuttable(op)
            if positions and item.can_change_signature(f):
                targets.append((i, positions, len(item.flow.feeding(op))))
        targets.sort(key=lambda t: -t[2])
        return [(i, group) for i, positions, _ in targets
                for group in ([positions] if len(positions) > 1 else []) + [[k] for k in positions]]

    def apply(self, item: ir_tools.Item, point) -> str | None:
        i, group = point
        with item.edit() as e:
            op = e.ops[i]
            f = ir_tools.function_of(op)
            for k in group:
                op.operands[k] = e.add_argument(f, op.operands[k].type)
            return e.text()
