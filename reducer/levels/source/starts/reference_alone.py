"""The reference-alone start: for a closeness check that fails between a JAX computation and a
NumPy reference the program wrote itself (`np.testing.assert_allclose(model(x), numpy_reference(x))`),
the one step where the two part, alone, on the values it had.

A model's normalisation layer compared with a NumPy version of the paper's formulas fails because
one step differs (the program's `jnp.var` is the population variance, the reference's `np.var(…,
ddof=1)` the sample one), not because of the projections and the training around it, which both
sides compute alike. Deleting statements cannot show this: removing a step from one side alone
breaks the comparison by far more than the bug. The program runs once more with `reference_probe`
on, which finds the first library call of the program whose inputs the reference also computed but
whose result it did not, and the reference's statement for that result. The proposal is the
program's own check on those two, fed the values the inputs had (at the row where they differ
most, then the whole arrays when they are small):

    h = np.array([0.5, 1.5, 4.0], np.float32)
    np.testing.assert_allclose(jnp.var(h), np.var(h, ddof=1), rtol=1e-05, atol=1e-06)

with the program's imports (and module-level constants the two read); the passes shrink the rest,
and every later candidate must keep the reference's statement as it is, its inputs aside (`keeps`).
"""
from __future__ import annotations

import ast
import copy
import json
from collections import Counter
from typing import Callable, Iterator

from oracles import kinds
from oracles.outcome import RunResult, Signature
from reducer.faults.nonfinite import first_of
from reducer.levels.source.computed_check import _callee
from reducer.levels.source.ast_tools import imported
from reducer.levels.source.starts.reference_probe import MARK

PRELUDE = "import reducer.levels.source.starts.reference_probe as _reference_probe; _reference_probe.install()"


def facts(output: str) -> dict | None:
    """What the probe reported, from a run's output; None when it found no step."""
    line = next((ln for ln in output.splitlines() if ln.startswith(MARK + " ")), None)
    try:
        return json.loads(line[len(MARK) + 1:]) if line else None
    except ValueError:
        return None


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class _Program:
    """The parts of the program a proposal is made of: its imports, its simple module-level
    constants, and the statements at given lines."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.imports = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
        self.imported = {name for s in self.imports for name in imported(s)}
        self.constants = {t.id: s for s in tree.body if isinstance(s, ast.Assign) and _literal(s.value)
                          for t in s.targets if isinstance(t, ast.Name)}

    def calls_at(self, line: int) -> list[ast.Call]:
        return [n for n in ast.walk(self.tree) if isinstance(n, ast.Call) and n.lineno <= line <= (n.end_lineno or 0)]

    def statement_at(self, line: int, kinds) -> ast.stmt | None:
        found = [s for s in ast.walk(self.tree) if isinstance(s, kinds) and s.lineno == line]
        return found[-1] if found else None

    def needs(self, nodes: list[ast.AST], bound: set[str]) -> list[ast.stmt] | None:
        """The module-level constants the nodes read; None when they read a name that is neither
        bound, imported, such a constant nor a builtin."""
        import builtins

        wanted = {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)} - bound
        if any(w not in self.imported and w not in self.constants and not hasattr(builtins, w) for w in wanted):
            return None
        return [self.constants[w] for w in sorted(wanted) if w in self.constants and w not in self.imported]


def _step_call(program: _Program, found: dict) -> ast.Call | None:
    """The program's call of the parting step, with its arguments replaced by the bound names."""
    calls = [c for c in program.calls_at(found["step_line"]) if isinstance(c.func, (ast.Name, ast.Attribute))
             and _callee(c)[1] == found["function"]]
    if len(calls) != 1 or _root(calls[0].func) not in program.imported:
        return None
    call = copy.deepcopy(calls[0])
    names, params = found["args"], found.get("params", [])
    call.args = [ast.Name(names[k], ast.Load()) if k < len(names) and names[k] else arg
                 for k, arg in enumerate(call.args)]
    for kw in call.keywords:  # the other arguments stay as written: `needs` checks what they read
        k = params.index(kw.arg) if kw.arg in params else None
        if k is not None and k < len(names) and names[k]:
            kw.value = ast.Name(names[k], ast.Load())
    return call


def _check(program: _Program, found: dict, step: ast.Call, reference: ast.expr) -> ast.stmt | None:
    """The program's failing check, comparing the step with the reference's statement, its literal
    options kept (`rtol`, `atol`)."""
    line = found["check_line"]
    calls = [c for c in program.calls_at(line) if _callee(c)[1] == found["check"] and len(c.args) >= 2]
    statement = next((s for s in ast.walk(program.tree) if isinstance(s, (ast.Expr, ast.Assert))
                      and s.lineno <= line <= (s.end_lineno or 0) and calls and calls[0] in list(ast.walk(s))), None)
    if statement is None:
        return None
    statement = copy.deepcopy(statement)
    call = next(c for c in ast.walk(statement) if isinstance(c, ast.Call) and _callee(c)[1] == found["check"]
                and len(c.args) >= 2)
    call.args = [step, reference, *[a for a in call.args[2:] if _literal(a)]]
    call.keywords = [kw for kw in call.keywords if kw.arg and _literal(kw.value)]
    if isinstance(statement, ast.Assert):
        statement.msg = None
    return statement


def _shape(value) -> tuple[int, ...]:
    return (len(value), *_shape(value[0])) if isinstance(value, list) and value else ()


def _size(value, form: dict, kind: str, cut: list[int]) -> str:
    """A plain value the step's call reads, as the proposal binds it: a length an array was cut from
    is now 1; a length a bound array has is read from it (`t = h.shape[1]`), so that shortening the
    array keeps the call consistent; anything else as it was."""
    if type(value) is not int:
        return repr(value)
    if kind == "cut" and value in cut:
        return "1"
    return next((f"{name}.shape[{k}]" for name, v in form.items() for k, n in enumerate(_shape(v)) if n == value),
                repr(value))


def _binding(name: str, value, numpy: str, dtype: str) -> str:
    if isinstance(value, float):
        return f"{name} = {value!r}"
    return f"{name} = {numpy}.array({value!r}, {numpy}.{dtype})"


def compose(program: str, found: dict) -> Iterator[str]:
    """The proposals for the probe's `found` facts: one per form of the values (one element, then
    the whole arrays); none when a part of it cannot stand alone."""
    try:
        parts = _Program(ast.parse(program))
    except (SyntaxError, ValueError):
        return
    step = _step_call(parts, found)
    statement = parts.statement_at(found["reference_line"], (ast.Assign, ast.Return))
    if step is None or statement is None or statement.value is None or not found["forms"]:
        return
    reference = copy.deepcopy(statement.value)
    check = _check(parts, found, step, reference)
    bound = set(found["forms"][0])
    scope = {k: v for k, v in found.get("scope", {}).items() if k not in bound and k not in parts.imported}
    constants = parts.needs([step, reference, check], bound | set(scope)) if check is not None else None
    if constants is None:
        return
    read = {n.id for node in (step, reference, check) for n in ast.walk(node) if isinstance(n, ast.Name)}
    numpy = next((a.asname or a.name for s in parts.imports if isinstance(s, ast.Import)
                  for a in s.names if a.name == "numpy"), None)
    head = [ast.unparse(s) for s in parts.imports + constants]
    for form, kind in zip(found["forms"], found.get("kinds", ["point"] * len(found["forms"]))):
        if numpy is None and any(not isinstance(v, float) for v in form.values()):
            continue
        values = [_binding(n, v, numpy or "np", found["dtypes"].get(n, "float32")) for n, v in form.items()]
        plain = [f"{n} = {_size(v, form, kind, found.get('sizes', []))}" for n, v in scope.items() if n in read]
        yield "\n".join(head + values + plain + [ast.unparse(check)]) + "\n"


def _same_step(start: ast.AST, node: ast.AST, inputs: set[str]) -> bool:
    """Whether `node` computes what `start` does on possibly other inputs: where `start` reads an
    input (`h`) anything may stand (`-1.0`, an array written out), a module's name may be spelled
    another way (`np`, `numpy`); every other part, its numbers included, is the same."""
    if isinstance(start, ast.Name) and start.id in inputs:
        return True
    if type(start) is not type(node):
        return False
    if isinstance(start, ast.Name):
        return True
    for field in start._fields:
        a, b = getattr(start, field), getattr(node, field, None)
        if isinstance(a, list):
            if not isinstance(b, list) or len(a) != len(b) or not all(_same_step(x, y, inputs) for x, y in zip(a, b)):
                return False
        elif isinstance(a, ast.AST):
            if field != "ctx" and not (isinstance(b, ast.AST) and _same_step(a, b, inputs)):
                return False
        elif a != b:
            return False
    return True


def _compared(program: str, check: str) -> tuple[ast.expr, ast.expr] | None:
    """The two sides of the program's last closeness call `check`."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError):
        return None
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and _callee(c)[1] == check and len(c.args) >= 2]
    return (calls[-1].args[0], calls[-1].args[1]) if calls else None


def _written_values(program: str) -> dict[str, object] | None:
    """The values a program writes out at its top level, by name: a number (`h = 0.5`) or an array
    (`h = np.array([[…]], np.float32)`, its nested list)."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError):
        return None
    found = {}
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        value = stmt.value
        if isinstance(value, ast.Call) and _callee(value)[1] == "array" and value.args:
            value = value.args[0]
        if _literal(value):
            found[stmt.targets[0].id] = ast.literal_eval(value)
    return found


def _kept(start: dict, candidate: dict, whole: bool) -> bool:
    """Whether a candidate keeps what the start wrote out: every value as it was (`whole`), or every
    array's shape."""
    if whole:
        return all(candidate.get(name) == value for name, value in start.items())
    return all(name in candidate and _shape(candidate[name]) == _shape(value)
               for name, value in start.items() if isinstance(value, list))


def _all_step_options(side: ast.expr, step: str) -> list[list]:
    """For each call of the step in `side`, the literal values it is given (positionally or by
    keyword: `axis=-1, epsilon=1e-3`, `'linear'`)."""
    return [[ast.literal_eval(a) for a in [*c.args, *(k.value for k in c.keywords)] if _literal(a)]
            for c in ast.walk(side) if isinstance(c, ast.Call) and _callee(c)[1] == step]


def _step_options(side: ast.expr, step: str) -> list | None:
    """The literal options the start's call of the step is given by keyword (`epsilon=1e-3`); its
    positional literals are shapes and sizes, which shrink with the input."""
    calls = [c for c in ast.walk(side) if isinstance(c, ast.Call) and _callee(c)[1] == step]
    return [ast.literal_eval(k.value) for k in calls[0].keywords if _literal(k.value)] if calls else None


class ReferenceAlone:
    """Start from the step where a JAX computation first parts from the program's NumPy reference."""

    name = "reference-alone"

    def __init__(self):
        self.found: dict | None = None  # what the probe reported

    def applies(self, signature: Signature) -> bool:
        return kinds.reads(signature) == "close"

    def proposals(self, program: str, run: Callable[[str], RunResult]) -> Iterator[str]:
        self.found = facts(run(first_of(program, PRELUDE)).output)
        if self.found is not None:
            yield from compose(program, self.found)

    def must_keep(self, start: str) -> Callable[[str], bool] | None:
        """What every later candidate must keep of the start: the reference's statement in its form
        (its values and inputs may change, not its computation: the average of two frames does not
        become one frame, a different comparison that fails as much), a call of the step with the
        literal options it was given (`epsilon=1e-3` dropped for the default is another
        computation; moved to a position, the same), and the shape of each array written out for
        it; its values too where the reference reads values of its own beside the step's inputs
        (a mean and a deviation recorded for one input no longer belong to another). A shorter input can fail
        for another reason: 3 frames, where the reference averages pairs, fail against
        `jax.image.resize` without its antialiasing too."""
        sides = _compared(start, self.found["check"]) if self.found else None
        if sides is None:
            return None
        check, step, reference = self.found["check"], self.found["function"], sides[1]
        inputs = set(self.found["forms"][0]) if self.found.get("forms") else set()
        written = {n: v for n, v in (_written_values(start) or {}).items() if n in inputs}
        options = _step_options(sides[0], step)
        # values of the reference's own (a mean, a deviation) go with the input they were computed from
        whole = bool(inputs - {name for name in self.found.get("args", []) if name})

        def holds(candidate: str) -> bool:
            found = _compared(candidate, check)
            return (found is not None and _same_step(reference, found[1], inputs)
                    and options is not None and any(Counter(options) <= Counter(o)
                                                    for o in _all_step_options(found[0], step))
                    and _kept(written, _written_values(candidate) or {}, whole))
        return holds
