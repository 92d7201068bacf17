"""Turn a one-expression function into a lambda: `@d` / `def f(x): return e` becomes
`f = d(lambda x: e)` (a body of `pass` returns None; one of the expression statement `e` returns
its value, which only matters if the caller reads it), which other passes can then inline."""
from __future__ import annotations

from reducer.levels.source import ast_tools as t


class DefToLambda(t.SourcePass):
    name = "def-to-lambda"

    def points(self, script):
        return list(range(len([n for n in t.nodes(script.tree) if t.one_expression(n)])))

    def apply(self, script, i):
        fresh = script.fresh()
        fn = [n for n in t.nodes(fresh) if t.one_expression(n)][i]
        return t.dump(fresh) if t.replace_node(fresh, fn, t.as_lambda(fn)) else None
