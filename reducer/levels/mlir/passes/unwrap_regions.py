"""Replace `while`, `case` and `if` by the body of one of their regions: each branch of a case or an
if, and one iteration of a while loop (its body, fed with the loop's initial values)."""
from __future__ import annotations

from reducer.levels.mlir.graph import operation
from reducer.levels.mlir.passes import _ir

#: operation -> regions that may stand in for it
REGIONS = {"stablehlo.while": lambda op: [1], "mhlo.while": lambda op: [1],
           "stablehlo.case": lambda op: list(range(len(op.regions))),
           "mhlo.case": lambda op: list(range(len(op.regions))),
           "stablehlo.if": lambda op: [0, 1], "mhlo.if": lambda op: [0, 1]}


def unwrap(op, k: int) -> None:
    op = operation(op)
    block = op.regions[k].blocks[0]
    for arg, value in zip(block.arguments, op.operands):
        arg.replace_all_uses_with(value)
    ops = [operation(o) for o in block.operations]
    for o in ops[:-1]:
        o.move_before(op)
    for result, value in zip(op.results, ops[-1].operands):
        result.replace_all_uses_with(value)
    op.erase()


class UnwrapRegions:
    name = "unwrap-regions"

    def candidates(self, program: str):
        base = _ir.Edit(program)
        if not base.ok:
            return
        for i, op in enumerate(base.ops):
            if op.name not in REGIONS:
                continue
            for k in REGIONS[op.name](op):
                if not op.regions[k].blocks:
                    continue
                with _ir.Edit(program) as e:
                    unwrap(e.ops[i], k)
                    out = e.text()
                yield out
