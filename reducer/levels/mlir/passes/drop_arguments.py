"""Drop function arguments nothing uses: those of every function at once, then per function, then
one at a time. Calls are rebuilt without the operand; for the function the pipeline
differentiates, its activity list loses the entry too. A change point is a list of (function
position, argument positions)."""
from __future__ import annotations

from reducer.levels.mlir.graph import operation
from reducer.levels.mlir import ir_tools
from reducer.passes import ReductionPass


def unused(f) -> list[int]:
    block = operation(f).regions[0].blocks[0]
    return [a.arg_number for a in block.arguments if not any(True for _ in a.uses)]


def drop(e: ir_tools.Edit, f, positions: list[int]) -> None:
    f = operation(f)
    block = f.regions[0].blocks[0]
    n = len(block.arguments)
    keep = [i for i in range(n) if i not in positions]
    for call in ir_tools.callers(e.module, ir_tools.func_name(f)):
        new = ir_tools.replace_call(call, [call.operands[i] for i in keep], [r.type for r in call.results])
        for old, fresh in zip(call.results, new.results):
            old.replace_all_uses_with(fresh)
        call.erase()
    for i in sorted(positions, reverse=True):
        block.erase_argument(i)
    e.signature_changed(f, keep, None)


class DropArguments(ReductionPass):
    name = "drop-arguments"

    def points(self, item: ir_tools.Item) -> list[list]:
        per_function = [(fi, unused(f)) for fi, f in enumerate(item.functions())]
        per_function = [(fi, p) for fi, p in per_function if p]
        groups = [per_function] if len(per_function) > 1 else []
        for fi, positions in per_function:
            groups += ([[(fi, positions)]] if len(positions) > 1 else []) + [[(fi, [i])] for i in positions]
        return groups

    def apply(self, item: ir_tools.Item, group) -> str | None:
        with item.edit() as e:
            functions = e.functions()
            for fi, positions in group:
                drop(e, functions[fi], positions)
            return e.text()
