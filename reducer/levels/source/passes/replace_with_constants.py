"""Replace an expression by the constant `1.0` (sizes such as `x.shape[0]` by `1`, conditions such
as `err > tol` by `False` or `True`, arrays built by a constructor also by `jax.numpy.ones(1)`): whole
sub-computations such as `jax.random.normal(key, (16, 6))` or `params["enc"]` often matter only as
"some number"."""
from __future__ import annotations

import ast

from reducer.levels.source.passes import _ast_tools as t
from reducer.levels.source.passes.scalarize_arrays import BUILDERS

SIMPLE = (ast.Constant, ast.Name, ast.Starred, ast.Slice, ast.FormattedValue, ast.JoinedStr, ast.Lambda)
VALUES = (1.0,)


def _applies(n: ast.AST) -> bool:
    return (isinstance(n, ast.expr) and not isinstance(n, SIMPLE)
            and not isinstance(getattr(n, "ctx", None), ast.Store | ast.Del))


def _builds_array(node: ast.AST) -> bool:
    """An array made by a constructor, possibly indexed: `jnp.linspace(0, 1)[None][:, 0]`."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in BUILDERS


def _is_size(node: ast.AST) -> bool:
    """`x.shape[0]`, `x.shape`, `len(x)`, `x.ndim`, `x.size`: sizes, which become the integer 1."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr in ("shape", "ndim", "size")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"


def _values(node: ast.AST) -> tuple:
    if _is_size(node):
        return (1,)
    if isinstance(node, ast.Compare | ast.BoolOp) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return (False, True) + VALUES
    return VALUES


class ReplaceWithConstants(t.SourcePass):
    name = "replace-with-constants"

    def points(self, script):
        tree = script.tree
        parents = t.parents(tree)
        has_jax = t.imports_module(tree, "jax")
        out = []
        for i, node in enumerate(n for n in t.nodes(tree) if _applies(n)):
            if isinstance(parents.get(node), ast.Call) and parents[node].func is node:
                continue  # `f(...)` with f replaced by a constant is never callable
            out += [(i, ast.Constant, value) for value in _values(node)]
            if _builds_array(node) and has_jax:  # an array that must stay an array: the smallest one
                out.append((i, ast.Expression, "jax.numpy.ones(1)"))
        return out

    def apply(self, script, point):
        i, kind, value = point
        fresh = script.fresh()
        old = [n for n in t.nodes(fresh) if _applies(n)][i]
        new = ast.Constant(value) if kind is ast.Constant else ast.parse(value, mode="eval").body
        return t.dump(fresh) if t.replace_node(fresh, old, new) else None
