"""Keyword arguments written positionally: `jax.image.resize(h, shape, method="linear")` becomes
`jax.image.resize(h, shape, "linear")`, two tokens fewer, when the keyword is the parameter that
comes next. The pass cannot know a callee's signature; the oracle tells whether the call still
means the same (a wrong position fails another way or not at all). Only the first keyword of a
call moves, so that the order of the positional arguments stays the one the callee declares."""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t


def _movable(call: ast.Call) -> bool:
    return bool(call.keywords) and call.keywords[0].arg is not None and not any(
        isinstance(a, ast.Starred) for a in call.args)


class PositionalArguments(t.SourcePass):
    name = "positional-arguments"

    def points(self, script):
        return [i for i, call in enumerate(t.nodes(script.tree, ast.Call)) if _movable(call)]

    def apply(self, script, point):
        fresh = script.fresh()
        call = t.nodes(fresh, ast.Call)[point]
        call.args.append(call.keywords.pop(0).value)
        return t.dump(fresh)
