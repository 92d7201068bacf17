"""Inline a variable by its value: `y = f(x)` followed by uses of `y` becomes those uses of `f(x)`;
tuple targets are paired with tuple values element by element (or indexed). When that leaves a
function whose body is a single `return`, the function becomes a lambda in the same step, since a
value used twice often only pays for itself once the `def` is gone. Where a block has several
variables used once, all of them are inlined first in one candidate (a written-back script names
every value, and one at a time cost the source level a test per name)."""
from __future__ import annotations

import ast

from reducer.levels.jaxpr import tidy
from reducer.levels.source import ast_tools as t


def _inline(body: list[ast.stmt], i: int) -> bool:
    stmt = body[i]
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return False
    binds = t.bindings(stmt.targets[0], stmt.value)
    if not binds:
        return False
    mapping = dict(binds)
    rest = body[i + 1:]
    for k, later in enumerate(rest):
        rebinds = {n.id for n in ast.walk(later) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        rest[k] = t.substitute(later, mapping)
        for name in rebinds & mapping.keys():
            del mapping[name]
        if not mapping:
            break
    body[i:] = rest
    return True


def _inlinable(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and bool(t.bindings(stmt.targets[0], stmt.value))


def _leaves_one_expression(owner: ast.AST, body: list[ast.stmt], i: int) -> bool:
    """Whether inlining statement `i` leaves `owner` a function of a single `return` (or `pass`)."""
    rest = body[:i] + body[i + 1:]
    return (isinstance(owner, ast.FunctionDef)
            and (not rest or (len(rest) == 1 and isinstance(rest[0], ast.Return | ast.Pass))))


class InlineVariables(t.SourcePass):
    name = "inline-variables"

    def points(self, script):
        out = []
        for k, (owner, field) in enumerate(t.statement_lists(script.tree)):
            body = getattr(owner, field)
            if sum(tidy.used_once(body, i) for i in range(len(body))) > 1:  # all of them, in one candidate
                out.append((k, None, False))
            for i, stmt in enumerate(body):
                if _inlinable(stmt):  # also as a lambda first, when that leaves one `return`
                    out += [(k, i, True)] if _leaves_one_expression(owner, body, i) else []
                    out.append((k, i, False))
        return out

    def apply(self, script, point):
        k, i, as_lambda = point
        fresh = script.fresh()
        o, f = t.statement_lists(fresh)[k]
        body = getattr(o, f)
        if i is None:
            tidy.inline_used_once(body)
        else:
            _inline(body, i)
        t.set_body(o, f, body)
        if as_lambda and not t.replace_node(fresh, o, t.as_lambda(o)):
            return None
        return t.dump(fresh)
