"""Spell imported names out where that is shorter: `import jax.numpy as jnp` or
`from jax.scipy.special import gammaln` is removed and its uses written as `jax.numpy.…`,
`jax.scipy.special.gammaln`, keeping a plain `import` of the top-level package."""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t


def _chain(dotted: str) -> ast.expr:
    parts = dotted.split(".")
    node: ast.expr = ast.Name(parts[0], ast.Load())
    for p in parts[1:]:
        node = ast.Attribute(node, p, ast.Load())
    return node


def _imports(tree: ast.Module) -> list[tuple[int, int]]:
    out = []
    for i, stmt in enumerate(tree.body):
        if isinstance(stmt, ast.Import):
            out += [(i, j) for j, a in enumerate(stmt.names) if a.asname]
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            out += [(i, j) for j, a in enumerate(stmt.names) if a.name != "*"]
    return out


def _rebound(tree: ast.AST, local: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == local and isinstance(n.ctx, ast.Store | ast.Del)
               for n in ast.walk(tree))


class InlineImports(t.SourcePass):
    name = "inline-imports"

    def points(self, script):
        tree = script.tree
        return [(i, j) for i, j in _imports(tree)
                if not _rebound(tree, tree.body[i].names[j].asname or tree.body[i].names[j].name)]

    def apply(self, script, point):
        i, j = point
        fresh = script.fresh()
        stmt = fresh.body[i]
        alias = stmt.names[j]
        local = alias.asname or alias.name
        dotted = alias.name if isinstance(stmt, ast.Import) else f"{stmt.module}.{alias.name}"
        top = dotted.split(".")[0]
        t.substitute(fresh, {local: _chain(dotted)})
        del stmt.names[j]
        new_body = [s for s in fresh.body if not (isinstance(s, ast.Import | ast.ImportFrom) and not s.names)]
        if not t.imports_module(ast.Module(new_body, []), top):
            new_body.insert(0, ast.Import(names=[ast.alias(name=dotted.rsplit(".", 1)[0]
                                                           if isinstance(stmt, ast.ImportFrom) else dotted)]))
        fresh.body = new_body
        return t.dump(fresh)
