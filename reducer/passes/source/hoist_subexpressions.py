"""Replace an expression by one of its sub-expressions (`jnp.mean((f(x) - y) ** 2)` becomes
`(f(x) - y) ** 2`, then `f(x) - y`, then `f(x)`), outer expressions first."""
from __future__ import annotations

import ast

from reducer.passes.source import _ast_tools as t

SKIP = (ast.Name, ast.Constant, ast.Starred, ast.FormattedValue, ast.JoinedStr, ast.Slice)


def _children(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.Lambda):
        return [node.body]
    kids = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr) and not isinstance(c, ast.Starred)]
    if isinstance(node, ast.Call):
        kids += [k.value for k in node.keywords]
    return [k for k in kids if not isinstance(getattr(k, "ctx", None), ast.Store)]


def _applies(node: ast.AST) -> bool:
    return (isinstance(node, ast.expr) and not isinstance(node, SKIP)
            and not isinstance(getattr(node, "ctx", None), ast.Store | ast.Del))


class HoistSubexpressions:
    name = "hoist-subexpressions"

    def candidates(self, source: str):
        tree = t.parse(source)
        if tree is None:
            return
        count = len([n for n in t.nodes(tree) if _applies(n)])
        for i in range(count):
            probe = [n for n in t.nodes(t.parse(source)) if _applies(n)][i]
            for j in range(len(_children(probe))):
                fresh = t.parse(source)
                node = [n for n in t.nodes(fresh) if _applies(n)][i]
                if t.replace_node(fresh, node, _children(node)[j]):
                    yield t.dump(fresh)
