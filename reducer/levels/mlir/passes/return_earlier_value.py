"""Return an earlier value: a function that nothing calls returns, in place of one of its results,
a value computed by an earlier operation of its body (or an argument), whatever its type;
everything after that value dies. Earliest values first (the largest cuts)."""
from __future__ import annotations

from reducer.levels.mlir.graph import operation
from reducer.levels.mlir.passes import _ir


def body_values(f) -> list[tuple[int, object]]:
    """(position, value): arguments (position -1), then results of the top-level operations of `f`
    (the operation's position), in order."""
    block = operation(f).regions[0].blocks[0]
    values = [(-1, a) for a in block.arguments]
    for i, op in enumerate(list(block.operations)[:-1]):
        values.extend((i, r) for r in operation(op).results)
    return values


class ReturnEarlierValue:
    name = "return-earlier-value"

    def candidates(self, program: str):
        base = _ir.Edit(program)
        if not base.ok:
            return
        for fi, f in enumerate(base.functions()):
            if not base.can_change_signature(f):
                continue
            block = operation(f).regions[0].blocks[0]
            returned = list(operation(list(block.operations)[-1]).operands)
            values = body_values(f)
            for ri, current in enumerate(returned):
                here = next((pos for pos, v in values if v == current), len(values))
                for vi, (pos, v) in enumerate(values):
                    if pos >= here:
                        break
                    with _ir.Edit(program) as e:
                        g = operation(e.functions()[fi])
                        new_values = body_values(g)
                        blk = g.regions[0].blocks[0]
                        results = list(operation(list(blk.operations)[-1]).operands)
                        results[ri] = new_values[vi][1]
                        e.set_results(g, results, list(range(len(results))))
                        out = e.text()
                    yield out
