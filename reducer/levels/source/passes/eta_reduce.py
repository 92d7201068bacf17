"""Eta-reduce lambdas: `lambda a, b: f(a, b)` becomes `f`."""
from __future__ import annotations

import ast

from reducer.levels.source.passes import _ast_tools as t


def _reducible(n: ast.AST) -> bool:
    if not (isinstance(n, ast.Lambda) and isinstance(n.body, ast.Call)) or n.body.keywords:
        return False
    a = n.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
        return False
    params = [p.arg for p in a.args]
    passed = [x.id if isinstance(x, ast.Name) else None for x in n.body.args]
    return passed == params and not (t.free_loads(n.body.func) & set(params))


class EtaReduce:
    name = "eta-reduce"

    def candidates(self, source: str):
        tree = t.parse(source)
        if tree is None:
            return
        for i in range(len([n for n in t.nodes(tree) if _reducible(n)])):
            fresh = t.parse(source)
            lam = [n for n in t.nodes(fresh) if _reducible(n)][i]
            if t.replace_node(fresh, lam, lam.body.func):
                yield t.dump(fresh)
