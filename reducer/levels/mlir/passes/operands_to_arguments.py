"""Turn operands into new function arguments: cut the edge from the operation that computes an
operand, so that it (and what only fed it) dies. All operands of an operation at once first, then
one at a time; operations with the most behind them first."""
from __future__ import annotations

from reducer.levels.mlir import module as mm
from reducer.levels.mlir.graph import Dataflow
from reducer.levels.mlir.passes import _ir


def cuttable(op) -> list[int]:
    """Positions of the operands of `op` computed by another operation, with a static type."""
    from jaxlib.mlir import ir

    return [k for k, v in enumerate(op.operands)
            if not isinstance(v.owner, ir.Block)
            and isinstance(v.type, ir.RankedTensorType) and v.type.has_static_shape]


class OperandsToArguments:
    name = "operands-to-arguments"

    def candidates(self, program: str):
        base = _ir.Edit(program)
        if not base.ok:
            return
        flow = Dataflow(base.module, base.ops)
        targets = []
        for i, op in enumerate(base.ops):
            f = _ir.function_of(op)
            if not mm.counted(op) or f is None or not base.can_change_signature(f):
                continue
            positions = cuttable(op)
            if positions:
                targets.append((i, positions, len(flow.feeding(op))))
        targets.sort(key=lambda t: -t[2])
        for i, positions, _ in targets:
            groups = ([positions] if len(positions) > 1 else []) + [[k] for k in positions]
            for group in groups:
                with _ir.Edit(program) as e:
                    op = e.ops[i]
                    f = _ir.function_of(op)
                    for k in group:
                        op.operands[k] = e.add_argument(f, op.operands[k].type)
                    out = e.text()
                yield out
