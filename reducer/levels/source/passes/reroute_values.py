"""Reroute a value: inside a function, an expression computed from one parameter is replaced by
another parameter of the same function (`lambda w, xs: f(w, xs[0])` becomes
`lambda w, xs: f(w, w)`), so that the inputs it came from can be dropped. C-Reduce does the same
with the variables in scope; here only a function's own parameters are offered, which keeps the
number of candidates small and the types plausible."""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t

FUNCTIONS = (ast.Lambda, ast.FunctionDef)
SKIP = (ast.Name, ast.Constant, ast.Starred, ast.Slice, ast.FormattedValue, ast.JoinedStr, ast.Lambda)


def _params(fn: ast.AST) -> list[str]:
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]


def _sites(tree: ast.AST) -> list[tuple[ast.expr, str]]:
    """(expression, parameter to put in its place), outer expressions first."""
    parents = t.parents(tree)
    sites = []
    for node in t.nodes(tree, ast.expr):
        if isinstance(node, SKIP) or isinstance(getattr(node, "ctx", None), ast.Store | ast.Del):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            continue
        reads, shadowed = t.free_loads(node), set()
        scope = parent
        while scope is not None:
            if isinstance(scope, FUNCTIONS):
                params = _params(scope)
                if reads & set(params):
                    sites += [(node, q) for q in params if q not in reads and q not in shadowed]
                    break
                shadowed |= set(params)
            scope = parents.get(scope)
    return sites


class RerouteValues(t.SourcePass):
    name = "reroute-values"

    def points(self, script):
        return list(range(len(_sites(script.tree))))

    def apply(self, script, i):
        fresh = script.fresh()
        node, name = _sites(fresh)[i]
        return t.dump(fresh) if t.replace_node(fresh, node, ast.Name(name, ast.Load())) else None
