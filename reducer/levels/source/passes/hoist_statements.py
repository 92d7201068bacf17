"""Hoist out of a function the statements that use none of its parameters or locals:

    def f(a):                          custom = jax.custom_jvp(g)
        custom = jax.custom_jvp(g)     custom.defjvp(rule)
        custom.defjvp(rule)      ->    def f(a):
        return custom(a)                   return custom(a)

so that the function is left one expression, which `def-to-lambda`, `eta-reduce` and
`inline-variables` then fold into its caller (`jax.grad(custom)`). Write-back and inlining leave
such wrappers behind; methods are left alone (their class body is not their callers' scope).
"""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t

_LEAVES = (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal)


def _stored(stmt: ast.stmt) -> set[str]:
    names = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    names |= {n.name for n in ast.walk(stmt) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    names |= {name for n in ast.walk(stmt) if isinstance(n, ast.Import | ast.ImportFrom) for name in t.imported(n)}
    return names


def _movable(stmt: ast.stmt) -> bool:
    return not any(isinstance(n, _LEAVES) for n in ast.walk(stmt))


def _hoistable(fn: ast.FunctionDef) -> list[int]:
    """Indices of the body statements that can run before `def`: they read no parameter and no name
    a statement staying inside binds, and bind no name one staying inside binds too."""
    a = fn.args
    params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
    params |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
    out = {i for i, s in enumerate(fn.body) if _movable(s)}
    while True:
        inside = params.union(*(_stored(s) for i, s in enumerate(fn.body) if i not in out))
        keep = {i for i in out if not (t.free_loads(fn.body[i]) | _stored(fn.body[i])) & inside}
        if keep == out:
            return sorted(out) if len(out) < len(fn.body) else []
        out = keep


def _sites(tree: ast.AST) -> list[tuple[ast.AST, str, ast.FunctionDef]]:
    """(owner, field, function) for every function defined in a module or function body."""
    return [(owner, field, s) for owner, field in t.statement_lists(tree) if not isinstance(owner, ast.ClassDef)
            for s in getattr(owner, field) if isinstance(s, ast.FunctionDef) and _hoistable(s)]


class HoistStatements(t.SourcePass):
    name = "hoist-statements"

    def points(self, script):
        return list(range(len(_sites(script.tree))))

    def apply(self, script, i):
        fresh = script.fresh()
        sites = _sites(fresh)
        if i >= len(sites):
            return None
        owner, field, fn = sites[i]
        moved = _hoistable(fn)
        body = getattr(owner, field)
        at = body.index(fn)
        body[at:at] = [fn.body[k] for k in moved]
        t.set_body(fn, "body", [s for k, s in enumerate(fn.body) if k not in moved])
        return t.dump(fresh)
