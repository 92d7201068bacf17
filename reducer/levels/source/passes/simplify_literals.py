"""Simplify literals: numbers to 0, 1 or 2 (this also shrinks array shapes and sizes given to
constructors; an integer inside a tuple, a shape, never becomes 0), strings to "", negated
constants to the constant, floats to short forms.

A value that occurs more than once changes everywhere at once: an integer above 2 (a dimension
that shapes share) first together, then alone; a float a run recorded (six significant digits or
more, as a reducer writes a value in: `h = -2.565721273422241`, inlined into both sides of a
comparison) only together, since changing one of its uses alone makes the two sides compute on
different inputs."""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t


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


def _recorded(value) -> bool:
    """A float with many significant digits: a value a run recorded, not one a person wrote."""
    if type(value) is not float or value != value or value in (float("inf"), float("-inf")):
        return False
    digits = repr(abs(value)).split("e")[0].replace(".", "").lstrip("0")
    return len(digits) >= 6


def _same_floats(tree) -> list[float]:
    """Recorded floats (their magnitudes) that occur more than once: one value, used in several places."""
    seen: dict[float, int] = {}
    for n in t.nodes(tree, ast.Constant):
        if _recorded(n.value):
            seen[abs(n.value)] = seen.get(abs(n.value), 0) + 1
    return sorted(v for v, count in seen.items() if count > 1)


class SimplifyLiterals(t.SourcePass):
    name = "simplify-literals"

    def points(self, script):
        tree = script.tree
        # first every occurrence at once of an integer shared by shapes, as one dimension
        out: list = [("shared", value, smaller) for value in _same_ints(tree) for smaller in (1, 2)]
        floats = _same_floats(tree)
        out += [("shared", value, simpler) for value in floats for simpler in _simpler(value)]
        parents = t.parents(tree)
        for i, node in enumerate(n for n in t.nodes(tree) if _applies(n)):
            constant = node.operand if isinstance(node, ast.UnaryOp) else node
            if isinstance(constant, ast.Constant) and _recorded(constant.value) and abs(constant.value) in floats:
                continue  # one use of a value used elsewhere too: only all of them at once
            options = [node.operand.value] if isinstance(node, ast.UnaryOp) else _simpler(node.value)
            if isinstance(parents.get(node), ast.Tuple) and type(node.value) is int:
                options = [v for v in options if v != 0]  # a shape: no zero-size arrays
            out += [("one", i, value) for value in options]
        return out

    def apply(self, script, point):
        what, where, value = point
        fresh = script.fresh()
        if what == "shared" and type(where) is float:  # every use of a recorded value, its sign kept
            for n in t.nodes(fresh, ast.Constant):
                if type(n.value) is float and abs(n.value) == where:
                    n.value = value if n.value > 0 else -value
            return t.dump(fresh)
        if what == "shared":
            for n in t.nodes(fresh, ast.Constant):
                if type(n.value) is int and n.value == where:
                    n.value = value
            return t.dump(fresh)
        old = [n for n in t.nodes(fresh) if _applies(n)][where]
        return t.dump(fresh) if t.replace_node(fresh, old, ast.Constant(value)) else None
