"""Keep only a condition's conversion to `bool`: `if C: …`, `while C: …`, `A if C else B` and
`C and …` / `C or …` become `bool(C)`, both branches dropped.

Python converts a condition with `bool`; on a JAX tracer that conversion is the failure
(`TracerBoolConversionError`, `ConcretizationTypeError`), and it needs neither branch. Inside a
function the statement is also tried as `return bool(C)` with what followed it in its block cut
(so that the function can become a lambda); then as the statement `bool(C)` alone. When the run's
traceback is known (`Script.failure`), only conditions on a line where the program failed are
tried: there the conversion is what raised; elsewhere it would only cost a run. The oracle decides
whether the failure was the conversion.
"""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t

STATEMENTS = (ast.If, ast.While)
EXPRESSIONS = (ast.IfExp, ast.BoolOp)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _sites(tree: ast.AST, failure: tuple) -> list[ast.AST]:
    """The conditions to try: those on a line where the program failed, when that is known."""
    lines = {line for line, _ in failure}
    return [n for n in t.nodes(tree) if isinstance(n, STATEMENTS + EXPRESSIONS) and (not lines or any(
        c.lineno <= line <= (c.end_lineno or c.lineno) for c in [_condition(n)] for line in lines))]


def _condition(node: ast.AST) -> ast.expr:
    return node.values[0] if isinstance(node, ast.BoolOp) else node.test


def _bool(node: ast.AST) -> ast.Call:
    return ast.Call(ast.Name("bool", ast.Load()), [_condition(node)], [])


def _in_function(tree: ast.AST, node: ast.AST) -> bool:
    """Whether `node` lies in a function's body (not in a class's or the module's own)."""
    parents = t.parents(tree)
    while node in parents:
        node = parents[node]
        if isinstance(node, FUNCTIONS + (ast.Lambda,)):
            return True
        if isinstance(node, ast.ClassDef):
            return False
    return False


def _holder(tree: ast.AST, stmt: ast.stmt) -> tuple[ast.AST, str, int]:
    for owner, field in t.statement_lists(tree):
        body = getattr(owner, field)
        for i, s in enumerate(body):
            if s is stmt:
                return owner, field, i
    raise LookupError("statement not in the tree")


class BareConversion(t.SourcePass):
    name = "bare-conversion"

    def points(self, script):
        def forms(node) -> tuple[str, ...]:  # `return bool(C)` first where a function can end there
            returns = isinstance(node, STATEMENTS) and _in_function(script.tree, node)
            return ("return", "bool") if returns else ("bool",)

        return [(i, form) for i, node in enumerate(_sites(script.tree, script.failure)) for form in forms(node)]

    def apply(self, script, point):
        i, form = point
        fresh = script.fresh()
        node = _sites(fresh, script.failure)[i]
        if isinstance(node, EXPRESSIONS):
            return t.dump(fresh) if t.replace_node(fresh, node, _bool(node)) else None
        owner, field, k = _holder(fresh, node)
        body = getattr(owner, field)
        if form == "return":
            t.set_body(owner, field, body[:k] + [ast.Return(_bool(node))])
        else:
            body[k] = ast.Expr(_bool(node))
        return t.dump(fresh)
