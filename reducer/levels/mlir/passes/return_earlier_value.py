"""Return an earlier value: a function that nothing calls returns, in place of one of its results,
a value computed by an earlier operation of its body (or an argument), whatever its type;
everything after that value dies. Earliest values first (the largest cuts). A change point is
(function position, result position, value position)."""
from __future__ import annotations

from reducer.levels.mlir.graph import operation
from reducer.levels.mlir import ir_tools
from reducer.passes import ReductionPass


def body_values(f) -> list[tuple[int, object]]:
    """(position, value): arguments (position -1), then results of the top-level operations of `f`
    (the operation's position), in order."""
    block = operation(f).regions[0].blocks[0]
    values = [(-1, a) for a in block.arguments]
    for i, op in enumerate(list(block.operations)[:-1]):
        values.extend((i, r) for r in operation(op).results)
    return values


class ReturnEarlierValue(ReductionPass):
    name = "return-earlier-value"

    def points(self, item: ir_tools.Item) -> list[tuple]:
        found = []
        for fi, f in enumerate(item.functions()):
            if not item.can_change_signature(f):
                continue
            block = operation(f).regions[0].blocks[0]
            values = body_values(f)
            for ri, current in enumerate(operation(list(block.operations)[-1]).operands):
                here = next((pos for pos, v in values if v == current), len(values))
                found += [(fi, ri, vi) for vi, (pos, _) in enumerate(values) if pos < here]
        return found

    def apply(self, item: ir_tools.Item, point) -> str | None:
        fi, ri, vi = point
        with item.edit() as e:
            g = operation(e.functions()[fi])
            block = g.regions[0].blocks[0]
            results = list(operation(list(block.operations)[-1]).operands)
            results[ri] = body_values(g)[vi][1]
            e.set_results(g, results, list(range(len(results))))
            return e.text()
