"""Whether a candidate's failing check of the program's own still fails the way the program's did,
judged by the values its run shows.

`computed_check` keeps a candidate only while its failing check reads what the program computes.
The same check can still fail for another reason under the same signature (type, kind of check,
what it reads, the masked message); two such ways are caught here from each candidate's output,
held to what the original run showed (read once, from its output):

- `reads=close` with a testing helper that prints its mismatch (NumPy's `assert_allclose`: `Max
  absolute difference: …`, `Max relative difference: …`; an `assert jnp.allclose(…)` prints
  nothing and is not judged): the candidate's mismatch must stay of the order of the original's,
  and its tolerance the same (`rtol=1e-05, atol=1e-06` dropped for the defaults compares float32
  with float64 to 1e-7: rounding alone fails it, and it fails with the bug fixed too).
  A Flax layer with `nn.gelu` (the tanh approximation) against a NumPy reference with the exact erf
  differs by ~4e-3 relative; deleting the activation from the reference makes it differ by ~50: a
  missing step of the computation, not the bug. A helper that shows no mismatch at all (the
  shapes or the NaN positions differ now) fails for another reason too; and so does one that
  compares a constant where the original compared two computed values (`assert_allclose(1.0 + 1,
  1.0 + erf(2.0))`, a mismatch of the same order by chance: the GELU gone from both sides).
- `reads=order` (`assert losses[-1] < losses[0]`): the check must not compare a value with itself.
  A candidate whose compared sides are the same expression (`assert loss < loss`), or whose
  message shows the same text for both sides where the original's differed (a training loop cut
  to one step: `loss did not fall: 0.3574 -> 0.3574`), fails whatever the program computes. Nor
  may it compare with a constant where the original compared two computed values (`assert
  losses[0] < 0`: a threshold, not whether the loss fell), nor stop showing the sides where the
  original's f-string message formatted them (`f"{0} -> {1.0}"` shows nothing of what is compared).

A candidate whose run does not show what is judged (no message for the sides, no traceback naming
the script) is not held to it: nothing to judge by.
"""
from __future__ import annotations

import ast
import dataclasses
import math
import re
from dataclasses import dataclass

from oracles import kinds
from oracles.outcome import Signature
from oracles.own_check import failed_check
from reducer.levels.source.computed_check import _callee, check_at, computes, holds, statement_at
from reducer.levels.source.passes._failure_site import frames

#: how far a candidate's mismatch may grow above the original's: one order of magnitude. The same
#: bug on other inputs (fewer elements, a scalar, another scale) moves the largest difference by
#: small factors, since it is a maximum of one error over the elements; a side that lost a step of
#: its computation (an activation, a normalization, a term) fails by the size of the values
#: themselves, orders of magnitude above a tolerance-sized discrepancy (the GELU case: ×10^4).
#: A smaller mismatch is not bounded: smaller or fewer inputs rightly shrink it, and the check's
#: tolerance still says it fails.
GROWTH = 10.0

_DIFFERENCE = re.compile(r"Max (absolute|relative) difference(?: among violations)?:\s*(\S+)", re.I)
_EXCEPTION = re.compile(r"[A-Za-z_][\w.]*(?::\s?(?P<msg>.*))?$")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])|(?<!\w)[-+]?(?:nan|inf)(?!\w)",
                     re.I)
_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_TOLERANCE = re.compile(r"Not equal to tolerance (rtol=\S+, atol=\S+)")
_CLOSENESS = re.compile(r"close|equal", re.I)
#: what a message or a check may put around a value it shows or compares: the same value
_CONVERSIONS = {"float", "item", "tolist"}


def _last_traceback(output: str) -> str:
    start = output.rfind("Traceback (most recent call last)")
    return output[start:] if start >= 0 else output


# -- reads=close: the mismatch a testing helper prints -----------------------------------------------
def mismatch(output: str) -> dict[str, float]:
    """What the testing helper that ended the run printed of its mismatch: `absolute` and
    `relative`, those it shows (none for a helper that prints no numbers, or a shape mismatch)."""
    found = {}
    for kind, text in _DIFFERENCE.findall(_last_traceback(output)):
        try:
            found[kind.lower()] = float(text.rstrip(",;"))
        except ValueError:
            continue
    return found


def grew(original: dict[str, float], seen: dict[str, float]) -> bool:
    """Whether the mismatch `seen` is more than GROWTH times the original's on every scale that
    says something: relative (not where a value compared with is 0 now: inf or nan) and absolute.
    Both must grow: the absolute alone grows with the scale of the values, the relative alone with
    one value near 0."""
    verdicts = []
    for kind, before in original.items():
        after = seen.get(kind)
        if after is None or not math.isfinite(before) or before <= 0 or math.isnan(after):
            continue
        if math.isinf(after) and kind == "relative":
            continue
        verdicts.append(after > GROWTH * before)
    return bool(verdicts) and all(verdicts)


def close_sides(parts: list[ast.AST]) -> list[tuple[ast.expr, ast.expr]]:
    """The pairs of values the closeness comparisons in a check compare: the first two arguments
    of `assert_allclose`, `allclose`, `isclose`, `assert_array_almost_equal`, `assertAllClose` …"""
    pairs = []
    for part in parts:
        for node in ast.walk(part):
            if isinstance(node, ast.Call) and len(node.args) >= 2 and _CLOSENESS.search(_callee(node)[1]):
                pairs.append((node.args[0], node.args[1]))
    return pairs


def tolerance(output: str) -> str:
    """The tolerance a testing helper said its comparison failed (`rtol=1e-05, atol=1e-06`), or ""."""
    found = _TOLERANCE.search(_last_traceback(output))
    return found.group(1) if found else ""


def close_holds(original: dict[str, float], output: str) -> bool:
    """Whether a candidate's comparison fails by a mismatch of the order of the original's."""
    seen = mismatch(output)
    return bool(seen) and not grew(original, seen)


# -- reads=order: the two sides of the failing comparison ------------------------------------------
def ordered_sides(parts: list[ast.AST]) -> list[tuple[ast.expr, ast.expr]]:
    """The pairs of operands the orderings (`<`, `<=`, `>`, `>=`) in a check's tests compare."""
    pairs = []
    for part in parts:
        for node in ast.walk(part):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                pairs += [(a, b) for op, a, b in zip(node.ops, operands, operands[1:]) if isinstance(op, _ORDERING)]
    return pairs


def same_expression(a: ast.expr, b: ast.expr) -> bool:
    """Whether two operands are one expression, so one value: none with a call (two `next(it)`, two
    random draws differ)."""
    return ast.dump(a) == ast.dump(b) and not any(isinstance(n, (ast.Call, ast.Await, ast.NamedExpr))
                                                  for n in ast.walk(a))


def _plain(expr: ast.expr) -> str:
    """An operand's dump without the conversions a message or a check puts around it (`float(loss)`,
    `loss.item()`): they show the same value."""
    while isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Name) and expr.func.id in _CONVERSIONS and len(expr.args) == 1:
            expr = expr.args[0]
        elif isinstance(expr.func, ast.Attribute) and expr.func.attr in _CONVERSIONS and not expr.args:
            expr = expr.func.value
        else:
            break
    return ast.dump(expr)


def _message(output: str) -> str | None:
    """The first line of the message of the exception that ended the run; None with no traceback."""
    if "Traceback (most recent call last)" not in output:
        return None
    for line in _last_traceback(output).splitlines()[1:]:
        if line.strip() and not line.startswith((" ", "\t")):
            m = _EXCEPTION.match(line)
            return (m.group("msg") or "") if m else None
    return None


def _message_expression(stmt: ast.stmt | None) -> ast.expr | None:
    """What a check's message is made from: an `assert`'s message, a `raise`'s exception's first argument."""
    expr = stmt.msg if isinstance(stmt, ast.Assert) else stmt.exc if isinstance(stmt, ast.Raise) else None
    if isinstance(expr, ast.Call) and expr.args:
        expr = expr.args[0]
    return expr


def _formatted(expr: ast.expr | None, message: str) -> dict[str, str]:
    """The text each expression an f-string message formats shows in `message` (its first line),
    by the expression's dump (`_plain`)."""
    if not isinstance(expr, ast.JoinedStr):
        return {}
    pattern, formats = "", []
    for part in expr.values:
        if isinstance(part, ast.Constant):
            pattern += re.escape(str(part.value).split("\n")[0])
            if "\n" in str(part.value):
                break
        elif isinstance(part, ast.FormattedValue):
            pattern += "(.*?)"
            formats.append(_plain(part.value))
    m = re.fullmatch(pattern, message)
    return dict(zip(formats, m.groups())) if m else {}


def shown_sides(tree: ast.Module, line: int, output: str) -> tuple[tuple[str, str] | None, str]:
    """The text the failing check's message shows for the two sides of its ordering, and how it was
    read: `format`, what an f-string message formats of them (`f"{losses[0]:.4f} -> {losses[-1]:.4f}"`);
    else `numbers`, the message's numbers when it shows exactly two; else (None, "")."""
    message = _message(output)
    if message is None:
        return None, ""
    texts = _formatted(_message_expression(statement_at(tree, line)), message)
    for a, b in ordered_sides(check_at(tree, line) or []):
        if _plain(a) in texts and _plain(b) in texts:
            return (texts[_plain(a)], texts[_plain(b)]), "format"
    numbers = _NUMBER.findall(message)
    return ((numbers[0], numbers[1]), "numbers") if len(numbers) == 2 else (None, "")


def _parsed(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def compares_with_itself(source: str, line: int) -> bool:
    """Whether the ordering the check at `line` of `source` makes compares an expression with itself."""
    tree = _parsed(source)
    return tree is not None and any(same_expression(a, b) for a, b in ordered_sides(check_at(tree, line) or []))


def computed_sides(tree: ast.Module, line: int, sides=ordered_sides) -> int:
    """How many sides of the check's comparison (`sides`: its orderings, or `close_sides`) read a
    value the program computes, the most over its comparisons: 2 for `losses[-1] < losses[0]`, 1
    once a side is a constant (`losses[0] < 0`, `assert_allclose(1.0 + 1, 1.0 + erf(2.0))`). A
    closeness side computes too by NumPy arithmetic or indexing on an array the program spells out
    (`0.5 * (h[:, 0::2] + h[:, 1::2])`, `x.var(ddof=1)`, `h = np.array([[…]])`: a reference's step
    on an input); an ordering's does not (`losses = np.array([0.3, 0.5]); losses[-1] < losses[0]` compares
    constants)."""
    reads = computes(tree)
    if sides is close_sides:
        arrays, plain = _spelled_arrays(tree), reads
        reads = lambda side: plain(side) or _arithmetic_on(side, arrays)  # noqa: E731
    return max((reads(a) + reads(b) for a, b in sides(check_at(tree, line) or [])), default=0)


def _spelled_arrays(tree: ast.Module) -> set[str]:
    """Names bound to an array written out in the program: `np.array([…])`, `jnp.asarray([…])`."""
    return {t.id for s in ast.walk(tree) if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)
            and _callee(s.value)[1] in ("array", "asarray") and s.value.args
            and isinstance(s.value.args[0], (ast.List, ast.Tuple)) for t in s.targets if isinstance(t, ast.Name)}


def _arithmetic_on(side: ast.expr, arrays: set[str]) -> bool:
    return any(isinstance(n, (ast.BinOp, ast.UnaryOp, ast.Subscript, ast.Attribute)) and any(
        isinstance(m, ast.Name) and m.id in arrays for m in ast.walk(n)) for n in ast.walk(side))


def sides_hold(source: str, output: str, script_name: str, computed: int) -> bool:
    """Whether a candidate's closeness comparison still compares as many computed values as the
    original's (`computed`): one side turned into a constant compares a computation with a number."""
    where, tree = frames(output, script_name), _parsed(source)
    return not where or tree is None or computed_sides(tree, where[-1][0], close_sides) >= computed


@dataclass(frozen=True)
class Ordering:
    """What the original's failing ordering showed: how many of its sides read computed values, and
    how its message showed two different sides (`format`, `numbers`; "" when it did not)."""

    computed: int = 0
    shown_by: str = ""

    def holds(self, source: str, output: str, script_name: str) -> bool:
        """Whether a candidate's failing ordering still compares two values as the original's did: not
        one expression with itself, not a computed value with a constant where the original compared
        two, and, where the original's message showed two different sides, showing two (an f-string
        message still formatting both sides: one that formats constants in their place shows nothing)."""
        where, tree = frames(output, script_name), _parsed(source)
        if not where or tree is None:
            return True
        line = where[-1][0]
        if any(same_expression(a, b) for a, b in ordered_sides(check_at(tree, line) or [])):
            return False
        if computed_sides(tree, line) < self.computed:
            return False
        if not self.shown_by:
            return True
        sides, how = shown_sides(tree, line, output)
        if self.shown_by == "format" and how != "format":
            return False
        return sides is None or sides[0] != sides[1]


# -- the guard the source level holds candidates to --------------------------------------------------
@dataclass(frozen=True)
class Guard:
    """What an interesting candidate must also show to count (`computed_check.holds`, then the
    values its failing check shows, against the original run's)."""

    wanted: Signature
    script_name: str
    computed: bool = False  # its failing check must read a computed value
    own: bool = False  # … one the program's own computation makes (not NumPy's on inputs alone)
    finite: bool | None = None  # … and ask whether it is finite (None: where the signature is of a non-finite value)
    original_mismatch: dict | None = None  # reads=close: what the original's helper printed
    close_computed: int = 0  # reads=close: how many of the values it compares are computed
    ordering: Ordering | None = None  # reads=order: what the original's ordering showed
    tolerance: str = ""  # reads=close: the tolerance the original's helper said it compared within

    def __bool__(self) -> bool:
        return (self.computed or bool(self.original_mismatch) or self.close_computed > 0 or self.ordering is not None
                or bool(self.tolerance))

    def __call__(self, source: str, output: str) -> bool:
        if self.computed and not holds(self.wanted, source, output, self.script_name, self.finite, self.own):
            return False  # its own check reads constants now, not what the program computes
        if self.original_mismatch and not close_holds(self.original_mismatch, output):
            return False  # it fails the comparison by another order of difference, or without one
        if self.close_computed and not sides_hold(source, output, self.script_name, self.close_computed):
            return False  # it compares a computation with a constant now
        if self.tolerance and tolerance(output) != self.tolerance:
            return False  # a stricter or looser check: rounding alone may fail it, or the bug pass it
        return self.ordering is None or self.ordering.holds(source, output, self.script_name)


def guard_for(wanted: Signature, program: str | None, run, script_name: str, log) -> Guard | None:
    """The guard candidates are held to, for a check of the program's own: what the starting
    `program`, failing as `run` did, shows of it (the log says which parts apply, and why not)."""
    if not kinds.program_checks(wanted) or not program or run is None:
        return None
    computed, finite = holds(wanted, program, run.output, script_name), None
    if not computed and kinds.on_nonfinite(wanted) and holds(wanted, program, run.output, script_name, False):
        computed, finite = True, False  # a comparison a non-finite value fails (`np.isclose(g, expected)`)
    own = computed and holds(wanted, program, run.output, script_name, finite, own=True)
    if own:
        log("each candidate's failing check must still read what the program's own computation makes (not "
            "constants, nor NumPy's draws)")
    elif computed:
        log("each candidate's failing check must still read what the program computes (not constants)")
    else:
        log("the program's failing check reads no value this reading follows to a computation: candidates are "
            "judged on the check's failure alone")
    guard = Guard(wanted, script_name, computed, own, finite)
    reads = kinds.reads(wanted)
    if kinds.nonfinite(wanted) and (failed_check(run, wanted) not in ("assert", "raise", "exit") or finite is False):
        reads = "close"  # a comparison (`assert_allclose`, `assert np.isclose(…)`) failing on a NaN or an Inf
    if reads == "close":
        guard = _close_part(guard, program, run.output, script_name, log)
    elif reads == "order":
        guard = _order_part(guard, program, run.output, script_name, log)
    return guard if guard else None


def _close_part(guard: Guard, program: str, output: str, script_name: str, log) -> Guard:
    where, tree = frames(output, script_name), _parsed(program)
    computed = computed_sides(tree, where[-1][0], close_sides) if where and tree is not None else 0
    if computed == 2:
        log("each candidate's comparison must compare two values the program computes, not one with a constant")
    original = mismatch(output)
    if not original:
        log("the program's comparison prints no mismatch: candidates are not held to its size")
    else:
        shown = ", ".join(f"{kind} {value:g}" for kind, value in sorted(original.items()))
        log(f"each candidate's comparison must fail by a mismatch of the program's order ({shown}; at most "
            f"{GROWTH:g}x on every scale)")
    held = tolerance(output)
    if held:
        log(f"each candidate's comparison must keep the program's tolerance ({held})")
    return dataclasses.replace(guard, original_mismatch=original or None, close_computed=computed, tolerance=held)


def _order_part(guard: Guard, program: str, output: str, script_name: str, log) -> Guard:
    where, tree = frames(output, script_name), _parsed(program)
    if not where or tree is None or compares_with_itself(program, where[-1][0]):
        return guard  # no line to read, or the program itself compares a value with itself
    sides, how = shown_sides(tree, where[-1][0], output)
    shown_by = how if sides is not None and sides[0] != sides[1] else ""
    ordering = Ordering(computed_sides(tree, where[-1][0]), shown_by)
    log("each candidate's ordering must compare two values, not one with itself"
        + (" nor with a constant" if ordering.computed == 2 else "")
        + (f" (its message shows {sides[0]} and {sides[1]}: a candidate's must show two)" if shown_by else ""))
    return dataclasses.replace(guard, ordering=ordering)
