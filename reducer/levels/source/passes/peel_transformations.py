"""Peel a transformation off a call: `T(f, ...)(args)` becomes `f(args)` (`jax.jit(f)(x)`,
`jax.grad(f)(x)`, `enzyme_jax_ir()(f)(x)`), and a batching one, `jax.vmap(f)(xs)`, also becomes
`f(xs[0])`, the function applied to the first item of each batched argument."""
from __future__ import annotations

import ast
import copy

from reducer.levels.source.passes import _ast_tools as t


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


class PeelTransformations:
    name = "peel-transformations"

    def candidates(self, source: str):
        tree = t.parse(source)
        if tree is None:
            return
        probes = [n for n in t.nodes(tree) if _peelable(n)]
        for i, probe in enumerate(probes):
            variants = ["plain"] + (["first-item"] if _batching(probe.func.func) else [])
            for variant in reversed(variants):
                fresh = t.parse(source)
                call = [n for n in t.nodes(fresh) if _peelable(n)][i]
                args = _first_items(call.args) if variant == "first-item" else call.args
                if args is None:
                    continue
                peeled = ast.Call(func=call.func.args[0], args=args, keywords=call.keywords)
                if t.replace_node(fresh, call, peeled):
                    yield t.dump(fresh)
