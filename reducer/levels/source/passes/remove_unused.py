"""Remove definitions nobody reads: unused functions, classes, imports and assigned names, all at
once first, then one by one; an assignment whose name is unused keeps only its value."""
from __future__ import annotations

import ast

from reducer.levels.source import ast_tools as t


def _defined(stmt: ast.stmt) -> set[str] | None:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {stmt.name}
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return t.imported(stmt)
    if isinstance(stmt, ast.Assign):
        names = [n for x in stmt.targets for n in ast.walk(x)]
        if all(isinstance(n, ast.Name | ast.Tuple | ast.List | ast.expr_context) for n in names):
            return {n.id for n in names if isinstance(n, ast.Name)}
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return {stmt.target.id}
    return None


def _unused(tree: ast.Module) -> list[tuple[int, str, int]]:
    """(statement list number, field, index) of statements that define only unread names."""
    used = t.free_loads(tree)
    out = []
    for k, (owner, field) in enumerate(t.statement_lists(tree)):
        if isinstance(owner, ast.ClassDef):
            continue
        for i, stmt in enumerate(getattr(owner, field)):
            names = _defined(stmt)
            if names and not (names & used) and not (names & {"__all__"}):
                out.append((k, field, i))
    return out


def _apply(script, picks: list[tuple[int, str, int]], keep_value: bool) -> str:
    tree = script.fresh()
    lists = t.statement_lists(tree)
    by_list: dict[int, list[int]] = {}
    for k, _, i in picks:
        by_list.setdefault(k, []).append(i)
    for k, idxs in by_list.items():
        owner, field = lists[k]
        body = getattr(owner, field)
        new = []
        for i, stmt in enumerate(body):
            if i not in idxs:
                new.append(stmt)
            elif keep_value and isinstance(stmt, ast.Assign):
                new.append(ast.Expr(stmt.value))
        t.set_body(owner, field, new)
    return t.dump(tree)


class RemoveUnused(t.SourcePass):
    name = "remove-unused"

    def points(self, script):
        picks = _unused(script.tree)
        if not picks:
            return []
        return [(tuple(picks), False)] + [((pick,), keep) for pick in picks for keep in (False, True)]

    def apply(self, script, point):
        picks, keep_value = point
        return _apply(script, list(picks), keep_value)
