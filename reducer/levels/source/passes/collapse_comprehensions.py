"""Collapse a comprehension to its one expression, on the whole of what it runs over or on its first
element: `assert all(jnp.isfinite(g).all() for g in jax.grad(f, (1,))(a, b))` becomes
`assert jnp.isfinite(jax.grad(f, (1,))(a, b)[0]).all()` (the `all` or `any` of one element is that
element), so that the check and the value it reads can be cut further (JAX's functions take an
array, not a tuple or list of them)."""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t

KINDS = (ast.GeneratorExp, ast.ListComp, ast.SetComp)
#: the builtins whose value on one element is that element's truth
FOLDS = ("all", "any")
#: what the loop's name is replaced by: the whole sequence, or its first element
FORMS = ("whole", "first")


def _collapsible(node: ast.AST) -> bool:
    """One `for` over a plain name, without conditions, its name read in the expression."""
    if not isinstance(node, KINDS) or len(node.generators) != 1:
        return False
    loop = node.generators[0]
    return (isinstance(loop.target, ast.Name) and not loop.ifs and not loop.is_async
            and t.name_uses(node.elt, loop.target.id) > 0)


class CollapseComprehensions(t.SourcePass):
    name = "collapse-comprehensions"

    def points(self, script):
        count = len([n for n in t.nodes(script.tree) if _collapsible(n)])
        return [(i, form) for i in range(count) for form in FORMS]

    def apply(self, script, point):
        i, form = point
        fresh = script.fresh()
        node = [n for n in t.nodes(fresh) if _collapsible(n)][i]
        loop = node.generators[0]
        value = loop.iter if form == "whole" else ast.Subscript(loop.iter, ast.Constant(0), ast.Load())
        collapsed = t.substitute(node.elt, {loop.target.id: value})
        fold = t.parents(fresh).get(node)
        if form == "first" and isinstance(fold, ast.Call) and fold.args == [node] and not fold.keywords \
                and isinstance(fold.func, ast.Name) and fold.func.id in FOLDS:
            node = fold
        return t.dump(fresh) if t.replace_node(fresh, node, collapsed) else None
