"""Drop decorators one at a time (`@jax.jit`, `@functools.partial(...)`, `@enzyme_jax_ir()` …)."""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t

DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class DropDecorators(t.SourcePass):
    name = "drop-decorators"

    def points(self, script):
        return [(i, j) for i, d in enumerate(t.nodes(script.tree, DEFS)) for j in range(len(d.decorator_list))]

    def apply(self, script, point):
        i, j = point
        fresh = script.fresh()
        del t.nodes(fresh, DEFS)[i].decorator_list[j]
        return t.dump(fresh)
