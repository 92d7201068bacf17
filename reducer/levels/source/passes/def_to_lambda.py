"""Turn a one-expression function into a lambda: `@d` / `def f(x): return e` becomes
`f = d(lambda x: e)` (a body of `pass` returns None), which other passes can then inline."""
from __future__ import annotations

from reducer.levels.source.passes import _ast_tools as t


class DefToLambda:
    name = "def-to-lambda"

    def candidates(self, source: str):
        tree = t.parse(source)
        if tree is None:
            return
        for i in range(len([n for n in t.nodes(tree) if t.one_expression(n)])):
            fresh = t.parse(source)
            fn = [n for n in t.nodes(fresh) if t.one_expression(n)][i]
            if t.replace_node(fresh, fn, t.as_lambda(fn)):
                yield t.dump(fresh)
