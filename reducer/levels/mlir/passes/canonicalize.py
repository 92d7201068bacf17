"""Use MLIR's own canonicaliser (and CSE, and symbol DCE) as a reducer: the engine keeps its output
when it is smaller and still fails."""
from __future__ import annotations

from reducer.levels.mlir import ir_tools
from reducer.passes import ReductionPass

PIPELINES = ["canonicalize", "canonicalize,cse", "cse", "symbol-dce"]


class Canonicalize(ReductionPass):
    name = "canonicalize"

    def points(self, item: ir_tools.Item) -> list[str]:
        return PIPELINES

    def apply(self, item: ir_tools.Item, pipeline: str) -> str | None:
        from jaxlib.mlir import passmanager

        with item.edit() as e:
            try:
                passmanager.PassManager.parse(f"builtin.module({pipeline})").run(e.module.operation)
            except Exception:  # MLIR's diagnostics: this pipeline does not apply to the module
                return None
            return e.text()
