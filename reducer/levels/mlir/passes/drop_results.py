"""Drop function results: all that can go at once, then one at a time, the last first (the first
results are usually what the function is for). A result can go when the function is not called,
or when no caller uses it (the calls are rebuilt without it). A change point is (function
position, result positions)."""
from __future__ import annotations

from reducer.levels.mlir.graph import operation
from reducer.levels.mlir import ir_tools
from reducer.passes import ReductionPass


def droppable(e: ir_tools.Item, f) -> list[int]:
    n = len(operation(f).attributes["function_type"].value.results)
    calls = ir_tools.callers(e.module, ir_tools.func_name(f))
    return [i for i in range(n) if all(not any(True for _ in c.results[i].uses) for c in calls)]


def drop(e: ir_tools.Edit, f, positions: list[int]) -> None:
    f = operation(f)
    block = f.regions[0].blocks[0]
    returned = list(operation(list(block.operations)[-1]).operands)
    keep = [i for i in range(len(returned)) if i not in positions]
    for call in ir_tools.callers(e.module, ir_tools.func_name(f)):
        new = ir_tools.replace_call(call, list(call.operands), [call.results[i].type for i in keep])
        for j, i in enumerate(keep):
            call.results[i].replace_all_uses_with(new.results[j])
        call.erase()
    e.set_results(f, [returned[i] for i in keep], keep)


class DropResults(ReductionPass):
    name = "drop-results"

    def points(self, item: ir_tools.Item) -> list[tuple]:
        found = []
        for fi, f in enumerate(item.functions()):
            positions = droppable(item, f)
            found += [(fi, group) for group in ([positions] if len(positions) > 1 else [])
                      + [[i] for i in reversed(positions)]]
        return found

    def apply(self, item: ir_tools.Item, point) -> str | None:
        fi, group = point
        with item.edit() as e:
            drop(e, e.functions()[fi], group)
            return e.text()
