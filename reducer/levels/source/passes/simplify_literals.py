"""Simplify literals: numbers to 0, 1 or 2 (this also shrinks array shapes and sizes given to
constructors; an integer inside a tuple, a shape, never becomes 0), strings to "", negated
constants to the constant, floats to short forms."""
from __future__ import annotations

import ast

from reducer.levels.source.passes import _ast_tools as t


def _simpler(value) -> list:
    if isinstance(value, bool) or value is None or value is Ellipsis:
        return []
    if isinstance(value, int):
        return [v for v in (0, 1, 2, value // 2) if abs(v) < abs(value)]
    if isinstance(value, float):
        return [v for v in (0.0, 1.0, 2.0, 0.5, float(round(value))) if v != value]
    if isinstance(value, complex):
        return [1.0, 1j]
    if isinstance(value, str):
        return [""] if value else []
    if isinstance(value, bytes):
        return [b""] if value else []
    return []


def _applies(n: ast.AST) -> bool:
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub | ast.UAdd) and isinstance(n.operand, ast.Constant):
        return True
    return isinstance(n, ast.Constant) and bool(_simpler(n.value))


def _same_ints(tree) -> list[int]:
    """Integers (above 2) that occur more than once: shapes that must change together."""
    seen: dict[int, int] = {}
    for n in t.nodes(tree, ast.Constant):
        if type(n.value) is int and n.value > 2:
            seen[n.value] = seen.get(n.value, 0) + 1
    return sorted((v for v, count in seen.items() if count > 1), reverse=True)


class SimplifyLiterals(t.SourcePass):
    name = "simplify-literals"

    def points(self, script):
        tree = script.tree
        # first every occurrence at once of an integer shared by shapes, as one dimension
        out: list = [("shared", value, smaller) for value in _same_ints(tree) for smaller in (1, 2)]
        parents = t.parents(tree)
        for i, node in enumerate(n for n in t.nodes(tree) if _applies(n)):
            options = [node.operand.value] if isinstance(node, ast.UnaryOp) else _simpler(node.value)
            if isinstance(parents.get(node), ast.Tuple) and type(node.value) is int:
                options = [v for v in options if v != 0]  # a shape: no zero-size arrays
            out += [("one", i, value) for value in options]
        return out

    def apply(self, script, point):
        what, where, value = point
        fresh = script.fresh()
        if what == "shared":
            for n in t.nodes(fresh, ast.Constant):
                if type(n.value) is int and n.value == where:
                    n.value = value
            return t.dump(fresh)
        old = [n for n in t.nodes(fresh) if _applies(n)][where]
        return t.dump(fresh) if t.replace_node(fresh, old, ast.Constant(value)) else None
