"""The check-alone start: the program's failing check and the statements of its function that
compute what it compares, fed the arrays those statements read as they were when it failed.

A check in a helper of a training script (`check_activation(params, x)`: a layer's pre-activation,
a JAX formula and a NumPy formula of it, compared) fails on what the last few statements make of an
array; the model, the data pipeline and the optimizer only made that array. The program runs once
more with `check_probe` on, which reports the line of the program's frame the failure was raised at
and the numeric arrays that frame held. The proposal is the failing statement, the statements
before it in its function that bind what it reads (followed back through what they read:
`program_slice`), stopping at the arrays the probe saw, which are written out, and the imports and
module-level definitions all these read:

    import jax.numpy as jnp
    import numpy as np
    def softplus(x):
        return jnp.log(1.0 + jnp.exp(x))
    pre = 263.8
    got = np.asarray(softplus(pre))
    want = np.logaddexp(0.0, np.asarray(pre, np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-05, atol=1e-06)

first at the one element where the compared values part (a non-finite one where only one side is,
else the largest gap; of an array with more dimensions than the compared values, what it holds
there: the row of logits whose `logsumexp` is that element; then the same as a batch of one, for
code that indexes its batch axis, and a batch of one element of each kind of non-finite value the
check read), then the whole arrays when they are small. Where the compared values are one number
(a mean over the batch: no element of them to part at), the rows of the batch where each array holds
its largest and its smallest value, each as a batch of one (the logit that saturates a sigmoid).
The values the check compares are never written out (a check of constants shows nothing of the
program). Where a statement reads such a name through a function of the program it calls
(`got = np.asarray(log_likelihood(model, x, y))`: the loss runs the model, then a formula), the call
is taken in, the formula kept and what it read of the model fed as the callee held it at its return
(`call_inline`). A name that is bound by neither a statement this reading follows nor an array the
probe saw (a model, a parameter that is no array) leaves no proposal.
"""
from __future__ import annotations

import ast
import math
from typing import Callable, Iterator

from oracles import kinds
from oracles.outcome import RunResult, Signature
from reducer.faults import cause as causes
from reducer.faults.nonfinite import first_of
from reducer.levels.source.computed_check import PREDICATES, _callee
from reducer.levels.source.starts.call_inline import take_in_calls
from reducer.levels.source.starts.check_probe import MARK, reported
from reducer.levels.source.starts.program_slice import outer_names, scope_of, slice_for

MAX_WHOLE = 256  # elements of the arrays written out whole, at most, in all
PRELUDE = "import reducer.levels.source.starts.check_probe as _check_probe"


def facts(output: str) -> dict | None:
    """What the probe reported last in a run's output; None when it reported nothing."""
    found = reported(output, MARK)
    return found[-1] if found else None


def failing_statement(tree: ast.Module, line: int) -> ast.stmt | None:
    """The innermost simple statement of `tree` that spans `line`; for a `raise` under an `if` (`if
    not np.allclose(a, b): raise ValueError(…)`), that `if`."""
    found = [s for s in ast.walk(tree) if isinstance(s, (ast.Expr, ast.Assert, ast.Assign, ast.AugAssign,
                                                         ast.AnnAssign, ast.Return, ast.Raise))
             and s.lineno <= line <= (s.end_lineno or s.lineno)]
    stmt = max(found, key=lambda s: s.lineno, default=None)
    if isinstance(stmt, ast.Raise):
        return next((s for s in ast.walk(tree) if isinstance(s, ast.If) and stmt in s.body), None)
    return stmt


def _compares(node: ast.AST) -> bool:
    """Whether `node` is a closeness or equality test of two values (`np.testing.assert_allclose`)."""
    return isinstance(node, ast.Call) and len(node.args) >= 2 and any(w in _callee(node)[1] for w in ("close", "equal"))


def compared(stmt: ast.stmt) -> list[ast.expr]:
    """What the failing statement checks: the two values a closeness call compares, or the test of
    an `assert` (or of the `if` around a `raise`)."""
    calls = [c for c in ast.walk(stmt) if _compares(c)]
    if calls:
        return list(calls[0].args[:2])
    return [stmt.test] if isinstance(stmt, (ast.Assert, ast.If)) else []


def checked_as_is(node: ast.expr) -> set[str]:
    """The names whose values a checked expression reads with nothing computed on them but the
    check's predicates (`jnp.isfinite(x).all()`, `np.asarray(got)`): the values the check itself
    is about, which a proposal must compute, not write out."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Call) and _callee(node)[1] in PREDICATES:
        inner = [node.func.value] if isinstance(node.func, ast.Attribute) else []
        return set().union(*(checked_as_is(a) for a in [*inner, *node.args]))
    if isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        return checked_as_is(node.value)
    parts = {ast.Compare: lambda n: [n.left, *n.comparators], ast.BoolOp: lambda n: n.values,
             ast.UnaryOp: lambda n: [n.operand]}.get(type(node))
    return set().union(*(checked_as_is(a) for a in parts(node))) if parts else set()


def _checks(function: ast.AST) -> bool:
    """Whether a function's body has a check of its own: an `assert`, a `raise`, or a closeness or
    equality test."""
    return any(isinstance(n, (ast.Assert, ast.Raise)) or _compares(n) for n in ast.walk(function))


def written_number(value: float) -> str:
    """A number as Python reads it back: `float('inf')` and `float('nan')` for the non-finite ones."""
    return repr(value) if math.isfinite(value) else f"float('{value}')"


def _nested(values: list, shape: list) -> str:
    if not shape:
        return written_number(values[0])
    step = len(values) // shape[0] if shape[0] else 0
    return "[" + ", ".join(_nested(values[k * step:(k + 1) * step], shape[1:]) for k in range(shape[0])) + "]"


def _points(arrays: dict, sides: list[str]) -> list[int]:
    """The flat indices where the two compared arrays part: where one is not finite and the other is,
    the first of each kind of non-finite value found there (a NaN row and a +Inf row of one softmax
    by hand, each a different outcome of one overflow); else the one where they differ most. No index
    unless both were seen, of one shape."""
    if len(sides) != 2 or not all(s in arrays for s in sides):
        return []
    a, b = (arrays[s] for s in sides)
    if a["shape"] != b["shape"] or not a["values"]:
        return []
    pairs = list(zip(a["values"], b["values"]))
    kinds: dict[str, int] = {}
    for k, (x, y) in enumerate(pairs):
        if math.isfinite(x) != math.isfinite(y):
            kinds.setdefault(repr(y if math.isfinite(x) else x), k)
    if kinds:
        return sorted(kinds.values())
    gaps = [abs(x - y) if math.isfinite(x - y) else 0.0 for x, y in pairs]
    return [max(range(len(gaps)), key=gaps.__getitem__)]


def module_alias(tree: ast.Module, module: str) -> str | None:
    """The name the program imports `module` as (`jnp` for `import jax.numpy as jnp`); None where it does not."""
    return next((a.asname or a.name for s in tree.body if isinstance(s, ast.Import) for a in s.names
                 if a.name == module), None)


def compose(program: str, found: dict, default_float: bool = False) -> Iterator[str]:
    """The proposals for the probe's `found` facts: the failing check at one point (or, where the
    compared values have none, at the rows of its batch that hold the largest and the smallest
    values), then whole; a JAX float32 array spelled as JAX's
    default float (`default_float`: for a failure that the program made float64 takes away, whose
    float32 values it made float64)."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError):
        return
    stmt = failing_statement(tree, found.get("line", 0))
    scope = scope_of(tree, stmt) if stmt is not None else None
    if scope is None:
        return
    arrays = found.get("arrays", {})
    sides = compared(stmt)
    direct = set().union(*(checked_as_is(side) for side in sides))
    known = frozenset(arrays) - direct
    part = slice_for(outer_names(stmt), scope, known)
    if part.unbound and found.get("returned"):
        arrays, changed = take_in_calls(tree, part.local + [stmt], part.unbound, scope, found)
        if changed:
            scope = scope_of(tree, stmt)
            known = frozenset(arrays) - direct
            part = slice_for(outer_names(stmt), scope, known)
    if part.unbound:
        return
    statements = part.statements() + [stmt]
    fed = [n for n in arrays if n in known and any(n in outer_names(s) for s in statements)]
    if not fed:
        return
    numpy, jnp = module_alias(tree, "numpy") or "numpy", module_alias(tree, "jax.numpy")
    module = [ast.unparse(s) for s in part.module]
    spelled = [f"import {name}" + (f" as {alias}" if alias != name else "")  # what the arrays are written with
               for name, alias in (("numpy", numpy), ("jax.numpy", jnp)) if alias]
    head = [line for line in spelled if line not in module] + module
    tail = [ast.unparse(s) for s in part.local + [stmt]]
    names = [next(iter(checked_as_is(side)), "") for side in sides]
    points = _points(arrays, names)
    shape = arrays[names[0]]["shape"] if points else None
    def fed_at(leading: int, chosen: list[int], batch: bool) -> str | None:
        at = [at_points(arrays[n], leading, chosen, jnp if arrays[n]["jax"] and jnp else numpy, batch, default_float)
              for n in fed]
        fits = sum(size for _, size in at) <= MAX_WHOLE
        return "\n".join(head + [f"{n} = {text}" for n, (text, _) in zip(fed, at)] + tail) + "\n" if fits else None

    if shape is not None and all(arrays[n]["shape"][:len(shape)] == shape for n in fed):
        forms = [(points[:1], False)] + ([(points[:1], True), (points, True)] if shape else [])
        forms = forms[:2] if len(points) == 1 else forms
        yield from filter(None, (fed_at(len(shape), chosen, batch) for chosen, batch in forms))
    elif not points:  # compared values with no element to part at (a mean over the batch): its extreme rows
        yield from filter(None, (fed_at(1, [row], True) for row in _extreme_rows(arrays, fed)))
    if sum(len(arrays[n]["values"]) for n in fed) <= MAX_WHOLE:
        values = [f"{n} = {written_whole(arrays[n], jnp if arrays[n]['jax'] and jnp else numpy, default_float)}"
                  for n in fed]
        yield "\n".join(head + values + tail) + "\n"


def written_whole(array: dict, module: str, default_float: bool = False) -> str:
    """An array written out whole, with `module`'s `array` (`jnp.array([[1.0, 2.0]], jnp.float32)`)."""
    return f"{module}.array({_nested(array['values'], array['shape'])}, {_dtype(array, module, default_float)})"


def _dtype(array: dict, module: str, default_float: bool) -> str:
    """How a proposal spells an array's dtype: JAX's default float for a JAX float32 array where
    `default_float`, else the array's own."""
    return "float" if default_float and array["jax"] and array["dtype"] == "float32" else f"{module}.{array['dtype']}"


def _extreme_rows(arrays: dict, fed: list[str], most: int = 4) -> list[int]:
    """Of a batch that the arrays `fed` share (their first dimension, longer than one), the rows where
    each of their floating ones holds its largest value and its smallest (a logit that saturates a
    sigmoid, a reading far from the rest), at most `most`, in the order of the arrays."""
    shapes = [arrays[n]["shape"] for n in fed]
    if not shapes or not all(sh and sh[0] == shapes[0][0] for sh in shapes) or shapes[0][0] < 2:
        return []
    rows: list[int] = []
    for n in fed:
        values, size = arrays[n]["values"], math.prod(arrays[n]["shape"][1:])
        if not arrays[n]["dtype"].startswith("float") or not values:
            continue
        finite = [[v for v in values[r * size:(r + 1) * size] if math.isfinite(v)] for r in range(shapes[0][0])]
        for pick, sign in ((max, 1.0), (min, -1.0)):
            row = max(range(len(finite)), key=lambda r: sign * pick(finite[r], default=-sign * math.inf))
            rows += [row] if row not in rows else []
    return rows[:most]


def at_points(array: dict, leading: int, points: list[int], module: str, batch: bool = False,
        default_float: bool = False) -> tuple[str, int]:
    """An array at the compared values' elements `points`, written out, and its size: the element where
    the array is of the compared shape, else what it holds there along its `leading` dimensions (a
    row of logits whose `logsumexp` over the last axis is the compared element). Of one point without
    `batch`, that element alone; with `batch`, the leading dimensions kept, the last of them as long
    as the points, the others of length one: a batch, for code that indexes its batch axis
    (`labels[:, None]`)."""
    rest = array["shape"][leading:]
    size = math.prod(rest)
    part = [v for p in points for v in array["values"][p * size:(p + 1) * size]]
    if batch:
        rest = [1] * (leading - 1) + [len(points)] + rest
    elif not rest:
        return written_number(part[0]), 1
    return f"{module}.array({_nested(part, rest)}, {_dtype(array, module, default_float)})", len(part)


class CheckAlone:
    """Start from the failing check and what its function computes for it, on the arrays it read."""

    name = "check-alone"

    def __init__(self):
        self.raised = "AssertionError"  # the type of the failure's exception, which the probe waits for
        self.default_float = False  # the failure's cause is float32 itself: float32 arrays spelled as `float`

    def applies(self, signature: Signature) -> bool:
        self.raised = signature.get("type") or self.raised
        self.default_float = causes.by_float64_alone(signature.get("cause") or "")
        return (kinds.on_nonfinite(signature) or bool(kinds.reads(signature))) and self.raised.isidentifier()

    def proposals(self, program: str, run: Callable[[str], RunResult]) -> Iterator[str]:
        try:
            tree = ast.parse(program)
        except (SyntaxError, ValueError):
            return
        if not any(_checks(f) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))):
            return  # no function to take a check out of (a written-back script's): the passes cut the rest
        found = facts(run(first_of(program, f"{PRELUDE}; _check_probe.install({self.raised!r})")).output)
        if found is not None:
            yield from compose(program, found, self.default_float)
