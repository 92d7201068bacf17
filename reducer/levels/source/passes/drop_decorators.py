"""Drop decorators one at a time (`@jax.jit`, `@functools.partial(...)`, `@enzyme_jax_ir()` …)."""
from __future__ import annotations

import ast

from reducer.levels.source.passes import _ast_tools as t

DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class DropDecorators:
    name = "drop-decorators"

    def candidates(self, source: str):
        tree = t.parse(source)
        if tree is None:
            return
        defs = t.nodes(tree, DEFS)
        for i, d in enumerate(defs):
            for j in range(len(d.decorator_list)):
                fresh = t.parse(source)
                target = t.nodes(fresh, DEFS)[i]
                del target.decorator_list[j]
                yield t.dump(fresh)
