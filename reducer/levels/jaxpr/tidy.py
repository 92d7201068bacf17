"""A written-back script as a person writes it: each value used once written where it is used, and
a scalar one or zero of float32 inside a function written as the literal.

The emitter names every equation's result (`b = jnp.ones((), jnp.float32)`, `g_ = c / f_`), which
is faithful to the traced program but three to five tokens a value more than anyone writes; the
source level then spent a test per name taking them away (seven tests for seven names, most of
its time on a loaded machine). `tidy` does it once, before the write-back's own check, which
judges the tidy script as it judges any other (the plain one is tried when it loses the failure).
A value is left named where it is used twice, inside a nested function or lambda (a loop's body:
moving it in would change what is traced), or where its expression calls back into Python.
"""
from __future__ import annotations

import ast

from reducer.levels.source.ast_tools import substitute

#: calls whose evaluation order is observable: a value that makes one stays where it is
EFFECTS = ("callback", "debug", "print")
#: scopes of their own, or code run many times: a value is not moved into one
NESTED = (ast.FunctionDef, ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp, ast.For,
          ast.While)
#: scalar fills of float32 and their literals (a weakly typed Python float takes its partner's type)
LITERALS = {"jnp.ones((), jnp.float32)": 1.0, "jnp.zeros((), jnp.float32)": 0.0}


def tidy(text: str, literals: bool = True) -> str:
    """`text` with single-use values inlined (and, with `literals`, float32 scalar fills as
    literals); `text` itself when it does not parse or nothing changes."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    before = ast.dump(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef):
            inline_used_once(node.body)
    if literals:
        for fn in [n for n in tree.body if isinstance(n, ast.FunctionDef)]:
            _FillsAsLiterals().visit(fn)
    return text if ast.dump(tree) == before else ast.unparse(ast.fix_missing_locations(tree)) + "\n"


class _FillsAsLiterals(ast.NodeTransformer):
    """Inside a function, where they meet traced arrays: a fill as a call's argument, or as an operand
    beside one that is no number (two numbers would be Python's arithmetic: `0.0 / 0.0` raises)."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        node.args = [_literal(a) or a for a in node.args]
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        left, right = _literal(node.left), _literal(node.right)
        if left is not None and right is None and not isinstance(node.right, ast.Constant):
            node.left = left
        elif right is not None and left is None and not isinstance(node.left, ast.Constant):
            node.right = right
        return node


def _literal(node: ast.AST) -> ast.Constant | None:
    value = LITERALS.get(ast.unparse(node)) if isinstance(node, ast.Call) else None
    return None if value is None else ast.Constant(value)


def inline_used_once(body: list[ast.stmt]) -> None:
    """Inline, in place, every plain `name = expr` of `body` whose name is read once after it, in
    the same scope and not in a loop (also the source level's first candidate of a block)."""
    i = 0
    while i < len(body):
        if used_once(body, i):
            body[i + 1:] = [substitute(s, {body[i].targets[0].id: body[i].value}) for s in body[i + 1:]]
            del body[i]
        else:
            i += 1


def used_once(body: list[ast.stmt], i: int) -> bool:
    """Whether statement `i` of `body` binds one name, read once after it in the same scope and not
    in a loop, to a value that does not call back into Python."""
    name = _single_name(body[i])
    return name is not None and _read_once_here(body[i + 1:], name) and not _has_effects(body[i].value)


def _single_name(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def _read_once_here(rest: list[ast.stmt], name: str) -> bool:
    """Read exactly once in `rest`, not inside a nested function or lambda, and never bound again."""
    outer = inner = 0

    def visit(node: ast.AST, nested: bool) -> None:
        nonlocal outer, inner
        if isinstance(node, ast.Name) and node.id == name:
            if isinstance(node.ctx, ast.Load):
                inner, outer = (inner + 1, outer) if nested else (inner, outer + 1)
            else:
                inner += 2  # bound again: leave it
        nested_here = nested or isinstance(node, NESTED)
        for child in ast.iter_child_nodes(node):
            visit(child, nested_here)

    for stmt in rest:
        visit(stmt, False)
    return outer == 1 and inner == 0


def _has_effects(value: ast.expr) -> bool:
    text = ast.unparse(value)
    return any(word in text for word in EFFECTS)
