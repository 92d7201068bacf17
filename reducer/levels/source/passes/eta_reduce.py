"""Eta-reduce lambdas: `lambda a, b: f(a, b)` becomes `f`."""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t


def _reducible(n: ast.AST) -> bool:
    if not (isinstance(n, ast.Lambda) and isinstance(n.body, ast.Call)) or n.body.keywords:
        return False
    a = n.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
        return False
    params = [p.arg for p in a.args]
    passed = [x.id if isinstance(x, ast.Name) else None for x in n.body.args]
    return passed == params and not (t.free_loads(n.body.func) & set(params))


class EtaReduce(t.SourcePass):
    name = "eta-reduce"

    def points(self, script):
        return list(range(len([n for n in t.nodes(script.tree) if _reducible(n)])))

    def apply(self, script, i):
        fresh = script.fresh()
        lam = [n for n in t.nodes(fresh) if _reducible(n)][i]
        return t.dump(fresh) if t.replace_node(fresh, lam, lam.body.func) else None
