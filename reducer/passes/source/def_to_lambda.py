"""Turn a one-expression function into a lambda: `@d` / `def f(x): return e` becomes
`f = d(lambda x: e)` (a body of `pass` returns None), which other passes can then inline."""
from __future__ import annotations

import ast

from reducer.passes.source import _ast_tools as t


def _convertible(n: ast.AST) -> bool:
    return isinstance(n, ast.FunctionDef) and len(n.body) == 1 and isinstance(n.body[0], ast.Return | ast.Pass)


def _result(fn: ast.FunctionDef) -> ast.expr:
    stmt = fn.body[0]
    return stmt.value if isinstance(stmt, ast.Return) and stmt.value is not None else ast.Constant(None)


class DefToLambda:
    name = "def-to-lambda"

    def candidates(self, source: str):
        tree = t.parse(source)
        if tree is None:
            return
        for i in range(len([n for n in t.nodes(tree) if _convertible(n)])):
            fresh = t.parse(source)
            fn = [n for n in t.nodes(fresh) if _convertible(n)][i]
            value: ast.expr = ast.Lambda(args=fn.args, body=_result(fn))
            for deco in reversed(fn.decorator_list):
                value = ast.Call(func=deco, args=[value], keywords=[])
            for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs:
                a.annotation = None
            if fn.args.vararg:
                fn.args.vararg.annotation = None
            if fn.args.kwarg:
                fn.args.kwarg.annotation = None
            new = ast.Assign(targets=[ast.Name(fn.name, ast.Store())], value=value, lineno=fn.lineno)
            if t.replace_node(fresh, fn, new):
                yield t.dump(fresh)
