"""The statements a few expressions of a script need to be evaluated in a program of their own, and
the values an instrumented run of the script shows them where the script's statements cannot say.

A start builds a small program around an expression of the user's script (the optimizer's
construction `build_optimizer(3e-4, warmup)`, the range of a training loop): the imports and
module-level definitions it reads (`build_optimizer`, `import optax`), and the simple statements before
it in the functions around it that bind what it reads (`warmup = 100`), followed back through what
those read in turn. A name this reading cannot follow (a function's parameter: `create_train_state(rng,
learning_rate)`; an attribute of an object: `config.lr`, `self.lr`) or one whose statements compute with
the program's own code (`steps = len(loader) * epochs`) is read from one more run of the script,
stopped at the statement itself (`instrumented`, `recorded`): its value, when it is a literal, stands
in for it.
"""
from __future__ import annotations

import ast
import builtins
import json
from dataclasses import dataclass, field

from reducer.levels.source.computed_check import _callee
from reducer.levels.source.ast_tools import free_loads, imported

BUILTINS = frozenset(dir(builtins))
#: builtins whose calls make a value of what they are given: a statement calling them computes nothing
#: of the program's
MAKERS = frozenset({"int", "float", "bool", "str", "tuple", "list", "dict", "set", "range", "round", "min", "max",
                    "abs", "pow", "sum", "len", "sorted", "dataclass", "field"})
#: what marks the line of an instrumented run that shows the values
MARKER = "<<reducer-start-values>>"


def binds(stmt: ast.stmt) -> set[str]:
    """The names a simple statement binds or changes: an import's names, a `def` / `class` name, an
    assignment's targets (their roots: `config.lr = …` changes `config`), the object a method call
    statement changes (`parser.add_argument(…)` changes `parser`). None for a compound statement."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return imported(stmt)
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute):
        targets = [stmt.value.func.value]
    else:
        return set()
    found = set()
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                found.add(node.id)
    return found


def outer_names(node: ast.AST) -> set[str]:
    """The names a statement or expression reads from around it: a function's or class's names less
    those it binds inside itself, and no builtin."""
    found = free_loads(node)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                found.discard(inner.id)
            elif isinstance(inner, (ast.Import, ast.ImportFrom)):
                found -= imported(inner)
    return found - BUILTINS


def modules(tree: ast.Module) -> set[str]:
    """The names the script's imports bind anywhere."""
    return {name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
            for name in imported(node)}


def computes_nothing(stmt: ast.stmt, imports: set[str]) -> bool:
    """Whether running a statement computes nothing with the program's own code: every call it makes is
    a library's (`optax.adam`, `math.sqrt`) or a builtin that makes a value; a definition runs nothing."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return True
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call):
            root = _callee(node)[0]
            if root not in imports and root not in MAKERS:
                return False
    return True


def _bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
    found = [getattr(stmt, name) for name in ("body", "orelse", "finalbody")
             if isinstance(getattr(stmt, name, None), list)]
    found += [handler.body for handler in getattr(stmt, "handlers", [])]
    found += [case.body for case in getattr(stmt, "cases", [])]
    return [body for body in found if body and isinstance(body[0], ast.stmt)]


def path_to(body: list[ast.stmt], target: ast.stmt) -> list[tuple[list[ast.stmt], int]] | None:
    """The statement lists from `body` down to `target`, each with the index of the statement on the way."""
    for k, stmt in enumerate(body):
        if stmt is target:
            return [(body, k)]
        for inner in _bodies(stmt):
            found = path_to(inner, target)
            if found is not None:
                return [(body, k), *found]
    return None


@dataclass
class Scope:
    """What a statement of the script sees: the simple statements that ran before it in the blocks and
    functions around it (`before`, in order), the parameters of those functions, and the module's own
    top-level statements."""

    before: list[ast.stmt] = field(default_factory=list)
    parameters: set[str] = field(default_factory=set)
    module: list[ast.stmt] = field(default_factory=list)


def scope_of(tree: ast.Module, stmt: ast.stmt) -> Scope | None:
    path = path_to(tree.body, stmt)
    if path is None:
        return None
    scope = Scope(module=[s for s in tree.body if binds(s)])
    for level, (body, k) in enumerate(path):
        owner = path[level - 1][0][path[level - 1][1]] if level else None
        if isinstance(owner, ast.ClassDef):
            continue  # a class body's names are not seen by its methods
        if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = owner.args
            scope.parameters |= {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if p}
        if level:
            scope.before += [s for s in body[:k] if binds(s)]
    return scope


@dataclass
class Slice:
    """The statements found (module-level and local, each in the script's order) and the names left
    unbound: a parameter, or a name bound in a way this reading does not follow."""

    module: list[ast.stmt]
    local: list[ast.stmt]
    unbound: set[str]

    def statements(self) -> list[ast.stmt]:
        return self.module + self.local


def slice_for(names: set[str], scope: Scope, known: frozenset[str] = frozenset()) -> Slice:
    """The statements that bind `names` where `scope` is, and what they read in turn (a module-level
    statement's names at module level); `known` names are bound already."""
    chosen: set[int] = set()
    unbound: set[str] = set()
    todo, seen = [(name, True) for name in names], set()
    while todo:
        name, local = todo.pop()
        if (name, local) in seen or name in known or name in BUILTINS:
            continue
        seen.add((name, local))
        here = [s for s in scope.before if name in binds(s)] if local else []
        if not here and not (local and name in scope.parameters):
            here = [s for s in scope.module if name in binds(s)]
        if not here:
            unbound.add(name)
        for stmt in here:
            if id(stmt) not in chosen:
                chosen.add(id(stmt))
                at_module = any(stmt is s for s in scope.module)
                todo += [(n, not at_module) for n in outer_names(stmt)]
    return Slice([s for s in scope.module if id(s) in chosen], [s for s in scope.before if id(s) in chosen], unbound)


def changed_elsewhere(tree: ast.Module, names: set[str], stmts: list[ast.stmt]) -> bool:
    """Whether the program binds or changes one of `names` outside `stmts` (`losses = []` and then
    `losses.append(loss)` in a loop: no constant)."""
    spans = [(s.lineno, s.end_lineno or s.lineno) for s in stmts]
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            name = node.id
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Name)):
            name = node.func.value.id
        else:
            continue
        if name in names and not any(first <= node.lineno <= last for first, last in spans):
            return True
    return False


def instrumented(program: str, stmt: ast.stmt, shown: list[ast.expr]) -> str | None:
    """`program` with, just before `stmt`, a line that prints the value of each expression of `shown`
    (a 0-d array as its item) and ends the run; None where the statement does not start its line."""
    lines = program.splitlines()
    head = lines[stmt.lineno - 1]
    indent = head[:stmt.col_offset]
    if indent.strip():
        return None
    values = ", ".join(ast.unparse(expr) for expr in shown)
    probe = (f"print({MARKER!r}, __import__('json').dumps([repr(_v.item() if getattr(_v, 'ndim', None) == 0 else _v) "
             f"for _v in ({values},)]), flush=True); raise SystemExit(0)")
    return "\n".join([*lines[:stmt.lineno - 1], indent + probe, *lines[stmt.lineno - 1:]]) + "\n"


def recorded(output: str, count: int) -> list[ast.expr | None] | None:
    """The literal each value an instrumented run printed stands for (None for a value that is no
    literal: an object, an array); None when the run did not print them."""
    for line in output.splitlines():
        if line.startswith(MARKER):
            try:
                texts = json.loads(line[len(MARKER):].strip())
            except ValueError:
                return None
            if not isinstance(texts, list) or len(texts) != count:
                return None
            return [_literal(text) for text in texts]
    return None


def _literal(text: str) -> ast.expr | None:
    try:
        ast.literal_eval(text)
        return ast.parse(text, mode="eval").body
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
