"""Use MLIR's own canonicaliser (and CSE, and symbol DCE) as a reducer: the engine keeps its output
when it is smaller and still fails."""
from __future__ import annotations

from reducer.levels.mlir.passes import _ir

PIPELINES = ["canonicalize", "canonicalize,cse", "cse", "symbol-dce"]


class Canonicalize:
    name = "canonicalize"

    def candidates(self, program: str):
        from jaxlib.mlir import passmanager

        for pipeline in PIPELINES:
            with _ir.Edit(program) as e:
                if not e.ok:
                    return
                try:
                    passmanager.PassManager.parse(f"builtin.module({pipeline})").run(e.module.operation)
                except Exception:
                    continue
                out = e.text()
            yield out
