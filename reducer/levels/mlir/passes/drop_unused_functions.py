"""Drop functions (and declarations) nothing refers to, all at once, then one at a time; the
function the pipeline differentiates, or the module's entry point, stays. A change point is the
positions of the functions."""
from __future__ import annotations

from reducer.levels.mlir.graph import operation
from reducer.levels.mlir import ir_tools
from reducer.passes import ReductionPass


def unused(e: ir_tools.Item) -> list[int]:
    used = ir_tools.used_symbols(e.module)
    entry = e.entry_name()
    return [fi for fi, f in enumerate(e.functions(declarations=True))
            if ir_tools.func_name(f) not in used and ir_tools.func_name(f) != entry]


class DropUnusedFunctions(ReductionPass):
    name = "drop-unused-functions"

    def points(self, item: ir_tools.Item) -> list[list[int]]:
        positions = unused(item)
        return ([positions] if len(positions) > 1 else []) + [[fi] for fi in positions]

    def apply(self, item: ir_tools.Item, group) -> str | None:
        with item.edit() as e:
            functions = e.functions(declarations=True)
            for fi in group:
                operation(functions[fi]).erase()
            return e.text()
