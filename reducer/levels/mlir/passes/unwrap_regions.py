"""Replace `while`, `case` and `if` by the body of one of their regions: each branch of a case or an
if, and one iteration of a while loop (its body, fed with the loop's initial values). A change point is
(operation position, region)."""
from __future__ import annotations

from reducer.levels.mlir import ir_tools
from reducer.passes import ReductionPass

#: operation -> regions that may stand in for it
REGIONS = {"stablehlo.while": lambda op: [1], "mhlo.while": lambda op: [1],
           "stablehlo.case": lambda op: list(range(len(op.regions))),
           "mhlo.case": lambda op: list(range(len(op.regions))),
           "stablehlo.if": lambda op: [0, 1], "mhlo.if": lambda op: [0, 1]}


class UnwrapRegions(ReductionPass):
    name = "unwrap-regions"

    def points(self, item: ir_tools.Item) -> list[tuple]:
        return [(i, k) for i, op in enumerate(item.ops) if op.name in REGIONS
                for k in REGIONS[op.name](op) if op.regions[k].blocks]

    def apply(self, item: ir_tools.Item, point) -> str | None:
        i, k = point
        with item.edit() as e:
            op = e.ops[i]
            ir_tools.splice(op.regions[k].blocks[0], op)
            return e.text()
