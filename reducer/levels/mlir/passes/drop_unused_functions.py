"""Drop functions (and declarations) nothing refers to, all at once, then one at a time; the
function the pipeline differentiates, or the module's entry point, stays."""
from __future__ import annotations

from reducer.levels.mlir.graph import operation
from reducer.levels.mlir.passes import _ir


def unused(e: _ir.Edit) -> list[int]:
    used = _ir.used_symbols(e.module)
    entry = e.entry_name()
    return [fi for fi, f in enumerate(e.functions(declarations=True))
            if _ir.func_name(f) not in used and _ir.func_name(f) != entry]


class DropUnusedFunctions:
    name = "drop-unused-functions"

    def candidates(self, program: str):
        base = _ir.Edit(program)
        if not base.ok:
            return
        positions = unused(base)
        groups = ([positions] if len(positions) > 1 else []) + [[fi] for fi in positions]
        for group in groups:
            with _ir.Edit(program) as e:
                functions = e.functions(declarations=True)
                for fi in group:
                    operation(functions[fi]).erase()
                out = e.text()
            yield out
