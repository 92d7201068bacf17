"""Peel a transformation off a call: `T(f, ...)(args)` becomes `f(args)` (`jax.jit(f)(x)`,
`jax.grad(f)(x)`, `enzyme_jax_ir()(f)(x)`), and a batching one, `jax.vmap(f)(xs)`, also becomes
`f(xs[0])`, the function applied to the first item of each batched argument."""
from __future__ import annotations

import ast
import copy

from reducer.levels.source import ast_tools as t


def _peelable(n: ast.AST) -> bool:
    return (isinstance(n, ast.Call) and isinstance(n.func, ast.Call) and len(n.func.args) >= 1
            and not isinstance(n.func.args[0], ast.Constant | ast.Starred))


def _batching(transform: ast.expr) -> bool:
    name = transform.attr if isinstance(transform, ast.Attribute) else getattr(transform, "id", "")
    return name in ("vmap", "pmap")


def _first_items(args: list[ast.expr]) -> list[ast.expr] | None:
    if any(isinstance(a, ast.Starred) for a in args):
        return None
    return [ast.Subscript(value=copy.deepcopy(a), slice=ast.Constant(0), ctx=ast.Load()) for a in args]


class PeelTransformations(t.SourcePass):
    name = "peel-transformations"

    def points(self, script):
        out = []
        for i, probe in enumerate(n for n in t.nodes(script.tree) if _peelable(n)):
            if _batching(probe.func.func) and _first_items(probe.args) is not None:
                out.append((i, "first-item"))
            out.append((i, "plain"))
        return out

    def apply(self, script, point):
        i, variant = point
        fresh = script.fresh()
        call = [n for n in t.nodes(fresh) if _peelable(n)][i]
        args = _first_items(call.args) if variant == "first-item" else call.args
        peeled = ast.Call(func=call.func.args[0], args=args, keywords=call.keywords)
        return t.dump(fresh) if t.replace_node(fresh, call, peeled) else None
