"""Replace an expression by one of its sub-expressions (`jnp.mean((f(x) - y) ** 2)` becomes
`(f(x) - y) ** 2`, then `f(x) - y`, then `f(x)`), outer expressions first, smaller sub-expressions
first."""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t

SKIP = (ast.Name, ast.Constant, ast.Starred, ast.FormattedValue, ast.JoinedStr, ast.Slice)


def _children(node: ast.expr, modules: set[str] = frozenset()) -> list[ast.expr]:
    """Direct sub-expressions; the elements of a tuple or list argument count as direct too, so
    that `solve((chol, True), y)` can become `chol` in one step, and so does a method's receiver
    (`err.max()` becomes `err`: through `err.max`, a bound method, it would not fail on the way)."""
    if isinstance(node, ast.Lambda):
        return [node.body]
    kids = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr) and not isinstance(c, ast.Starred)]
    if isinstance(node, ast.Call):
        kids += [k.value for k in node.keywords]
        kids += [e for a in node.args if isinstance(a, ast.Tuple | ast.List) for e in a.elts]
        if isinstance(node.func, ast.Attribute) and not (isinstance(_root(node.func), ast.Name)
                                                         and _root(node.func).id in modules):
            kids.append(node.func.value)
    kids = [k for k in kids if not isinstance(getattr(k, "ctx", None), ast.Store) and not isinstance(k, ast.Starred)]
    return sorted(kids, key=lambda k: len(ast.unparse(k)))  # the biggest cut first


def _module_names(tree: ast.AST) -> set[str]:
    names = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            names |= t.imported(n)
    return names


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def _targets(tree: ast.AST) -> list[ast.expr]:
    """Expressions worth replacing; `jax.numpy.linalg` style module paths are left alone."""
    modules = _module_names(tree)
    return [n for n in t.nodes(tree) if isinstance(n, ast.expr) and not isinstance(n, SKIP)
            and not isinstance(getattr(n, "ctx", None), ast.Store | ast.Del)
            and not (isinstance(n, ast.Attribute) and isinstance(_root(n), ast.Name) and _root(n).id in modules)]


class HoistSubexpressions(t.SourcePass):
    name = "hoist-subexpressions"

    def points(self, script):
        modules = _module_names(script.tree)
        return [(i, j) for i, node in enumerate(_targets(script.tree)) for j in range(len(_children(node, modules)))]

    def apply(self, script, point):
        i, j = point
        fresh = script.fresh()
        node = _targets(fresh)[i]
        return t.dump(fresh) if t.replace_node(fresh, node, _children(node, _module_names(fresh))[j]) else None
