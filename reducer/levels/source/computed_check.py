"""Whether the program's own failing check still reads something the program computes.

A check of the program's own (`assert loss < previous`, `np.testing.assert_allclose(a, b)`,
`if not ok: raise …`) fails on values; shrinking could replace the computation behind them by the
constants it produced (`last = 1.0; assert last < 0.5`), which fails the same way and reproduces
nothing. A candidate of the own-check family therefore counts only while the failing check (the
statement at the line its traceback names, with the `if` around a `raise` or an exit) reads a value
computed by a call into a library or into a function of the script that makes one, followed through
the script's assignments, the lists it fills and what its functions' calls pass them; a `raise` or
an exit must stand under an `if` (or `while`) whose test
does, since one that stops unconditionally checks nothing. A check on a NaN or an Inf must still
ask whether the value is finite, not drift to another question the same values fail. Predicates the
check applies (`isfinite`, `all`, `allclose` …) are not
computations of their own. Where a name is bound in a way this reading does not follow (a
function's parameter, a `global`), the check is taken to read a computed value.

`check_values` holds a candidate to this and to what the failing check shows of the values it
compares (a mismatch of the original's order, an ordering of two values, not one), in `guard_for`.
"""
from __future__ import annotations

import ast
import builtins

from oracles import kinds
from oracles.outcome import Signature
from reducer.levels.source.ast_tools import imported
from reducer.levels.source.passes._failure_site import frames

#: libraries a program makes its inputs and references with: with `own`, a value one of them makes counts
#: only where it is made of one the program computes (`np.asarray(params)`), not of a draw or a constant
REFERENCE_LIBRARIES = {"numpy", "scipy", "math", "cmath", "random", "statistics"}
#: names read at most, before a check whose reading goes on longer is taken to read a computed value
MAX_STEPS = 20_000
#: what a check applies to the values it reads: never the computation it checks
PREDICATES = {"isfinite", "isnan", "isinf", "all", "any", "allclose", "isclose", "array_equal", "abs", "max", "min",
              "item", "float", "int", "bool", "len", "sum", "tolist", "format", "str", "repr", "print", "exit",
              "array", "asarray"}
#: what makes a number of a dtype from what it is given: a constant of a constant (`jnp.float64(0.0)`)
SCALAR_TYPES = {f"{kind}{bits}" for kind, sizes in (("float", (16, 32, 64)), ("int", (8, 16, 32, 64)),
                                                     ("uint", (8, 16, 32, 64)), ("complex", (64, 128)))
                for bits in sizes} | {"bfloat16", "bool_"}


def _callee(call: ast.Call) -> tuple[str, str]:
    """(root name, last name) of what a call calls: (`np`, `assert_allclose`) for `np.testing.assert_allclose`."""
    node, last = call.func, ""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        if isinstance(node, ast.Attribute) and not last:
            last = node.attr
        node = node.value if not isinstance(node, ast.Call) else node.func
    root = node.id if isinstance(node, ast.Name) else ""
    return root, last or root


def _filled(target: ast.expr) -> str | None:
    """The name whose contents a method call on `target` fills: `losses` of `losses` and of
    `history["loss"]` (through subscripts), None for anything else."""
    while isinstance(target, ast.Subscript):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _references(stmt: ast.Import | ast.ImportFrom) -> set[str]:
    """The names an import binds to REFERENCE_LIBRARIES' modules and functions (`np`, `default_rng`)."""
    if isinstance(stmt, ast.ImportFrom):
        return imported(stmt) if (stmt.module or "").split(".")[0] in REFERENCE_LIBRARIES else set()
    return imported(ast.Import([a for a in stmt.names if a.name.split(".")[0] in REFERENCE_LIBRARIES]))


class _Reader:
    def __init__(self, tree: ast.Module, own: bool = False):
        self.modules: set[str] = set()
        self.references: set[str] = set()  # with `own`, the names of REFERENCE_LIBRARIES' modules and functions
        fills: list[tuple[str, list[ast.expr]]] = []
        self.bindings: dict[str, list[ast.AST]] = {}
        self.opaque: set[str] = set()  # names bound where this reading does not follow
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.modules |= imported(node)
                self.references |= _references(node) if own else set()
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bindings.setdefault(node.name, []).append(node)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor,
                                   ast.withitem, ast.NamedExpr, ast.comprehension)):
                targets = (node.targets if isinstance(node, ast.Assign) else
                           [node.optional_vars] if isinstance(node, ast.withitem) else [node.target])
                value = (node.context_expr if isinstance(node, ast.withitem) else
                         getattr(node, "iter", None) or node.value)
                for target in targets:
                    for name in ast.walk(target) if target is not None else ():
                        if isinstance(name, ast.Name):
                            self.bindings.setdefault(name.id, []).append(value)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.opaque |= set(node.names)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _filled(node.func.value):
                # `losses.append(loss)` fills `losses`, `history["loss"].append(loss)` fills `history`
                fills.append((_filled(node.func.value), [*node.args, *(k.value for k in node.keywords)]))
        for name, values in fills:
            if name not in self.modules:  # `np.asarray(x)` calls a module's function, fills nothing
                self.bindings.setdefault(name, []).extend(values)
        self._parameters(tree)
        self.computed: set[str] = set()
        self.reading: set[str] = set()
        self.steps = 0

    def _parameters(self, tree: ast.Module) -> None:
        """A function's parameters take what its calls in the script pass (any argument, any call)."""
        calls: dict[str, list[ast.expr]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                calls.setdefault(node.func.id, []).extend([*node.args, *(k.value for k in node.keywords)])
        for node in ast.walk(tree):
            named = {target.id: node.value for target in getattr(node, "targets", [])
                     if isinstance(target, ast.Name) and isinstance(node.value, ast.Lambda)}
            functions = [(node.name, node)] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else \
                [(name, value) for name, value in named.items()]
            for name, function in functions:
                args = function.args
                for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                    if a is not None:
                        self.bindings.setdefault(a.arg, []).extend(calls.get(name, []))

    def name(self, name: str) -> bool:
        """Whether a name's value comes from a computation. Only a yes is remembered: a no met while
        the same name is being read (a cycle through a function that returns it) may turn yes."""
        if name in self.computed:
            return True
        self.steps += 1
        if name in self.reading or self.steps > MAX_STEPS:
            return self.steps > MAX_STEPS  # past the budget, take it as computed
        self.reading.add(name)
        try:
            found = name in self.opaque or any(self.value(v) for v in self.bindings.get(name, []) if v is not None)
        finally:
            self.reading.discard(name)
        if found:
            self.computed.add(name)
        return found

    def value(self, bound: ast.AST) -> bool:
        """Whether what a name is bound to computes: a function by what it returns, a lambda by its
        body, a class always (its instances are the program's objects), anything else by itself."""
        if isinstance(bound, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return any(self.node(r.value) for r in _own_returns(bound))
        if isinstance(bound, ast.Lambda):
            return self.node(bound.body)
        return isinstance(bound, ast.ClassDef) or self.node(bound)

    def node(self, node: ast.AST) -> bool:
        """Whether evaluating `node` computes something (a call into a library or the script's code)."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                root, last = _callee(sub)
                predicate = last in PREDICATES or last in SCALAR_TYPES or last.startswith("assert")
                if not predicate and (root in self.modules and root not in self.references
                                      or root in self.bindings and self.name(root)):
                    return True  # a library's call, or one of the script's functions that computes
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                if sub.id not in self.modules and not hasattr(builtins, sub.id) and self.name(sub.id):
                    return True
        return False


def computes(tree: ast.Module):
    """Whether an expression of `tree` reads a value the program computes, as a check is read here."""
    return _Reader(tree).node


def _own_returns(function: ast.AST) -> list[ast.Return]:
    """The `return`s of `function` with a value, not those of the functions defined inside it."""
    found, todo = [], list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return found


def check_at(tree: ast.Module, line: int) -> list[ast.AST] | None:
    """What the failing check at `line` decides on: an `assert`'s test; for a `raise` or an exit, the
    tests of the `if`s around it (none: it stops unconditionally); for a call (a testing helper),
    the call. None when no statement is there."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    stmt = statement_at(tree, line)
    if stmt is None:
        return None
    if isinstance(stmt, ast.Assert):
        return [stmt.test]
    if not (isinstance(stmt, ast.Raise) or _exits(stmt)):
        return [stmt]
    tests, node = [], parents.get(stmt)
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(node, (ast.If, ast.While)):
            tests.append(node.test)
        node = parents.get(node)
    return tests


def statement_at(tree: ast.Module, line: int) -> ast.stmt | None:
    """The innermost statement spanning `line` (the failing check a traceback names), or None."""
    at = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and n.lineno <= line <= (n.end_lineno or n.lineno)]
    return min(at, key=lambda n: (n.end_lineno or n.lineno) - n.lineno) if at else None


def _exits(stmt: ast.stmt) -> bool:
    """Whether a statement is a call of `sys.exit` / `exit` / `quit`."""
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and _callee(stmt.value)[1] in ("exit", "quit"))


def reads_computed_value(source: str, line: int, finite: bool = False, own: bool = False) -> bool:
    """Whether the check failing at `line` of `source` reads a value the program computes (with `own`,
    one its own computation makes, not NumPy's or the standard library's on inputs: `rng.normal()` is
    none), and, with `finite`, whether it still asks if that value is finite (`isfinite`, `isnan`, `isinf`)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    parts = check_at(tree, line)
    if parts is None:
        return True  # no statement there to read: nothing to judge by
    reader = _Reader(tree, own)
    if finite and not any(_asks_finite(part) for part in parts):
        return False
    if any(_uncalled_method(part) for part in parts):
        return False  # `x.any` without its call is a bound method: always true, whatever x holds
    return any(reader.node(part) for part in parts)


#: array methods a check calls: read without the call, they are the method itself (always true)
ARRAY_PREDICATES = {"any", "all", "item", "sum", "max", "min", "mean", "tolist"}


def _uncalled_method(node: ast.AST) -> bool:
    """Whether the check's truth is that of an array method not called (`not isnan(g).any`)."""
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node = node.operand
    if isinstance(node, ast.BoolOp):
        return any(_uncalled_method(v) for v in node.values)
    return isinstance(node, ast.Attribute) and node.attr in ARRAY_PREDICATES


def _asks_finite(node: ast.AST) -> bool:
    names = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return bool(names & {"isfinite", "isnan", "isinf", "nan_to_num", "nan", "inf"})


def holds(wanted: Signature, source: str, output: str, script_name: str, finite: bool | None = None,
          own: bool = False) -> bool:
    """For a check of the program's own (`own-check`, `nonfinite`), whether the candidate `source`'s
    failing check still reads a computed value (at the line its run's traceback names in the
    script; with `own`, one the program's own computation makes), and for a check on a non-finite
    value (`finite`: as the signature says) still asks whether it is finite; any other failure holds."""
    if not kinds.program_checks(wanted):
        return True
    finite = kinds.on_nonfinite(wanted) if finite is None else finite
    where = frames(output, script_name)
    if not where:  # an exit with a message prints no traceback
        return wanted.get("check") != "exit" or exits_hold(source, finite, own)
    return reads_computed_value(source, where[-1][0], finite, own)


def exits_hold(source: str, finite: bool = False, own: bool = False) -> bool:
    """For a program that stopped by an exit no traceback places (`raise SystemExit("…")`,
    `sys.exit("…")`): whether none of its exits stops unconditionally, and one of them reads a value the
    program computes (`reads_computed_value`); a program without an exit of its own holds."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    stops = [node for node in ast.walk(tree) if _exits(node) or isinstance(node, ast.Raise)
             and node.exc is not None and _callee_name(node.exc) == "SystemExit"]
    if any(check_at(tree, stop.lineno) == [] for stop in stops):
        return False
    return not stops or any(reads_computed_value(source, stop.lineno, finite, own) for stop in stops)


def _callee_name(node: ast.expr) -> str:
    """`SystemExit` of `SystemExit`, `SystemExit(…)` and `builtins.SystemExit(…)`."""
    node = node.func if isinstance(node, ast.Call) else node
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""

