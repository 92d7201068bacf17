"""Where a script failed: its own frames in the failure's traceback, and the statements running there.

A run's output names, in its last traceback (or in the faulthandler dump of a crash), the line each
frame of the script was at. `frames` reads those (line, function) pairs; `running` turns one into
the chain of statements that were executing in that frame, from the frame's own body inwards
(a `for` loop, then the statement in its body …). Everything after such a statement in its list
never ran: the failure-site pass cuts it, and replaces the loops on the chain by their first
iteration. `relocate` carries frames from a text to its normalized print (same statements, other lines).
"""
from __future__ import annotations

import ast
import re
from pathlib import PurePath

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+),? in (?P<name>[\w<>.]+)')
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

Link = tuple[ast.AST, str, int]  # a statement: the node holding its list, the list's field, its index


def frames(output: str, script_name: str) -> tuple[tuple[int, str], ...]:
    """(line, function) of every frame in `script_name` of the traceback that ended the run."""
    start = max(output.rfind("Traceback (most recent call last)"), output.rfind("Current thread"))
    if start < 0:
        return ()
    found = []
    for m in _FRAME.finditer(output[start:]):
        if PurePath(m.group("file")).name == script_name:
            found.append((int(m.group("line")), m.group("name")))
    return tuple(dict.fromkeys(found))


def statement_lists(node: ast.AST) -> list[tuple[ast.AST, str]]:
    """The statement lists directly inside `node` (bodies, branches, handlers, cases)."""
    out = [(node, f) for f in ("body", "orelse", "finalbody")
           if isinstance(getattr(node, f, None), list) and getattr(node, f)
           and isinstance(getattr(node, f)[0], ast.stmt)]
    for part in getattr(node, "handlers", []) + getattr(node, "cases", []):
        out.append((part, "body"))
    return out


def _inside(stmt: ast.stmt, line: int) -> bool:
    return stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno)


def running(tree: ast.Module, line: int, function: str) -> list[Link]:
    """The statements executing when the frame of `function` is at `line`, outermost first; empty
    when the line is not in the body of a scope of that name (a lambda's or comprehension's frame)."""
    chain: list[Link] = []
    scope, node = "<module>", tree
    while True:
        step = next(((owner, field, i) for owner, field in statement_lists(node)
                     for i, stmt in enumerate(getattr(owner, field)) if _inside(stmt, line)), None)
        if step is None:
            break
        stmt = getattr(step[0], step[1])[step[2]]
        if isinstance(stmt, _SCOPES):
            if line < stmt.body[0].lineno:  # the `def` or `class` statement itself is running
                chain.append(step)
                break
            scope, node, chain = stmt.name, stmt, []
            continue
        chain.append(step)
        node = stmt
    return chain if scope == function else []


def failing_statements(tree: ast.Module, failure: tuple) -> dict[tuple[int, str], int]:
    """For each statement list on the failure's path, (id of its holder, field) -> the index of the
    statement that was running there."""
    cut: dict[tuple[int, str], int] = {}
    for line, function in failure:
        for owner, field, i in running(tree, line, function):
            key = (id(owner), field)
            cut[key] = max(i, cut.get(key, i))
    return cut


def _path(tree: ast.Module, line: int) -> list[tuple[int, str, int]]:
    """The innermost statement spanning `line`, as (holder number, field, index) steps from the module."""
    path, node = [], tree
    while True:
        step = next(((k, f, i) for k, (owner, f) in enumerate(statement_lists(node))
                     for i, s in enumerate(getattr(owner, f)) if _inside(s, line)), None)
        if step is None:
            return path
        path.append(step)
        node = getattr(statement_lists(node)[step[0]][0], step[1])[step[2]]


def relocate(failure: tuple, old_text: str, new_text: str) -> tuple[tuple[int, str], ...]:
    """`failure`'s frames, read in `old_text`, given the lines of the same statements in `new_text`
    (its normalized print): each frame goes to the first line of the innermost statement it was in."""
    old, new = ast.parse(old_text), ast.parse(new_text)
    out = []
    for line, function in failure:
        node: ast.AST = new
        try:
            for k, f, i in _path(old, line):
                node = getattr(statement_lists(node)[k][0], f)[i]
        except (IndexError, AttributeError):
            continue
        if node is not new:
            out.append((node.lineno, function))
    return tuple(dict.fromkeys(out))


def where_failed(program: str, ran: str, output: str, script_name: str) -> tuple[tuple[int, str], ...]:
    """The frames of `program`'s failure, read from the output of a run of `ran`: the same text,
    or one whose normalized print `program` is; nothing for any other program."""
    found = frames(output, script_name)
    if program == ran or not found:
        return found
    try:
        return relocate(found, ran, program) if ast.unparse(ast.parse(ran)) + "\n" == program else ()
    except (SyntaxError, ValueError):
        return ()
