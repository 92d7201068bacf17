"""Inline a variable by its value: `y = f(x)` followed by uses of `y` becomes those uses of `f(x)`;
tuple targets are paired with tuple values element by element (or indexed). When that leaves a
function whose body is a single `return`, the function becomes a lambda in the same step, since a
value used twice often only pays for itself once the `def` is gone."""
from __future__ import annotations

import ast

from reducer.levels.source.passes import _ast_tools as t


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


class InlineVariables:
    name = "inline-variables"

    def candidates(self, source: str):
        tree = t.parse(source)
        if tree is None:
            return
        for k, (owner, field) in enumerate(t.statement_lists(tree)):
            for i, stmt in enumerate(getattr(owner, field)):
                if not isinstance(stmt, ast.Assign):
                    continue
                fresh = t.parse(source)
                o, f = t.statement_lists(fresh)[k]
                body = getattr(o, f)
                if not _inline(body, i):
                    continue
                t.set_body(o, f, body)
                if t.one_expression(o):
                    plain = t.dump(fresh)
                    if t.replace_node(fresh, o, t.as_lambda(o)):
                        yield t.dump(fresh)
                    yield plain
                else:
                    yield t.dump(fresh)
