"""What made the 0 (or the Inf) that the operation at a value's origin turned into a non-finite value.

`log(0)` is `-inf` and `0 * log(0)` a NaN whatever made the 0; a reproducer that reads a 0 from its
inputs shows the `log` but not the program's bug. So, for a value made forward, the origin names its
`cause`: the first operation whose own fix makes the program run through (or get past its check):

- `exp-underflow`: an `exp` (or a product, a quotient, a power, a product of many factors) rounded
  to an exact 0 from inputs that are not 0 (a softmax's terms at a low temperature), fixed by a small
  number in its place (`safe_ops.UNDERFLOW`); where no one operation's fix is enough but theirs
  together are (a likelihood's probabilities multiplied step by step, each step's matrix product and
  product rounding some of them to 0), the fewest of them that are, joined by `+`
  (`mul+dot_general-underflow`);
- `exp-overflow`: an `exp` (or `cosh`, `sinh`…) that overflowed, whose Inf a later division turned
  into the 0 (`1 / (1 + exp(200))` in a sigmoid written by hand), fixed by the inner `where`
  (`safe_ops.DERIVATIVE`: its value 0 there, and its derivative taken at a safe point, so that a
  gradient taken beside the checked value stays finite too); looked for only where the operation
  is at its pole (`log(0)`).

- `integer_pow-rounding`: float32's rounding of the arithmetic that made the operation's input put
  it outside the operation's domain (a one-pass variance `mean(x ** 2) - mean(x) ** 2` of nearly
  constant readings, positive in exact arithmetic, below 0 in float32 under a `sqrt`), or at its pole
  (`log(1 - sigmoid(z))` where the sigmoid rounds to 1: `logistic-rounding`), fixed by that
  arithmetic evaluated in float64 in the program made float64 (`safe_ops.ROUNDING`, `safe_ops.WIDEN`);
  `rounding` alone where the program made float64 runs through as it is (its data float64 then too);
  looked for where the operation's NaN is outside its domain, or where no fix of the operation is
  enough (its value 0 there divides by 0 next: `reducer.faults.rounding_fix`).

An Inf made forward has a cause or `none`. A NaN made forward has one only where the operation at
its origin is at its pole (`0 * log(0)`) or outside its domain, and none is named where none is
found. A value made in a derivative has one only where its operation is at its pole or the edge of
its domain (the gradient of `-log(1 - sigmoid(z))` at a `z` where the sigmoid rounds to 1:
`rounding`), and none is named where none is found. An underflow and an overflow are looked for before a
rounding (an `exp` evaluated in float64 does not underflow either: the softmax's cause is its
underflow). A candidate is held to the
cause: it runs through (or past its check) with that operation fixed: a constant outside the domain
written in (`sqrt(-1.0)`) does not, in float64 either.
"""
from __future__ import annotations

from typing import Callable

from oracles.nonfinite import NAN, named
from oracles.nonfinite import NO_CAUSE as NONE
from reducer.faults import safe_ops

__all__ = ["NAN", "NONE", "named", "looked_for", "of", "held", "fix", "rounded", "is_rounding", "by_float64_alone"]
UNDERFLOW, OVERFLOW, ROUNDING = "underflow", "overflow", "rounding"
#: each kind of cause: the operations that can make it, and the fix that takes it away
KINDS = {UNDERFLOW: (safe_ops.UNDERFLOWING, safe_ops.UNDERFLOW),
         OVERFLOW: (safe_ops.OVERFLOW_ONLY, safe_ops.DERIVATIVE),
         ROUNDING: (safe_ops.ROUNDING, safe_ops.WIDEN)}
EDGE, POLE, OUTSIDE = safe_ops.POINTS


def looked_for(kind: str, where: str, point: str) -> tuple[str, ...]:
    """The kinds of cause looked for, for a value of `kind` made `where` by an operation at `point`:
    for a derivative's value, where the operation's input is its pole or the edge of its domain
    (the derivative of `log` at a 0 that a sigmoid's rounding made: `rounding`)."""
    if where != "forward":
        return (UNDERFLOW, OVERFLOW, ROUNDING) if point in (POLE, EDGE) else ()
    if NAN in kind.split(","):
        return (UNDERFLOW, OVERFLOW, ROUNDING) if point == POLE else (ROUNDING,) if point in (OUTSIDE, "") else ()
    return (UNDERFLOW, OVERFLOW, ROUNDING) if point == POLE else (UNDERFLOW,)


def of(kind: str, where: str, op: str, point: str, fixed_passes: Callable[[str, str], bool],
       together: Callable[[tuple[str, ...], str], bool] | None = None,
       among: Callable[[], set[str] | None] | None = None) -> str:
    """The cause (`exp-underflow`, `exp-overflow`), `none` for an Inf made forward with none, else "";
    `fixed_passes(operation, how)`: whether the program runs through with that fix; `together(operations,
    how)`: with all those fixed at once (one run that rules a kind of cause out, where each costs one);
    `among()`: after that run, the operations the program binds where known (the rest are not tried)."""
    kinds = looked_for(kind, where, point)
    if not kinds:
        return ""
    if op in safe_ops.OVERFLOW_ONLY and NAN not in kind.split(","):
        return NONE if where == "forward" else ""  # its Inf is never a 0's
    found = next(filter(None, (_of_kind(name, op, fixed_passes, together, among) for name in kinds)), "")
    return found or (NONE if where == "forward" and NAN not in kind.split(",") else "")


def _of_kind(name: str, op: str, fixed_passes, together, among=None) -> str:
    """The cause of kind `name` (`of`), or ""."""
    ops, how = KINDS[name]
    ops = tuple(o for o in ops if o != op)
    if name == ROUNDING and together is not None and together((), how):
        return ROUNDING  # the program made float64 runs through as it is (its values float64 then too)
    if together is not None and len(ops) > 1 and not together(ops, how):
        return ""
    bound = among() if among is not None else None
    ops = ops if bound is None else tuple(o for o in ops if o in bound)
    found = next((o for o in ops if fixed_passes(o, how)), "")
    if not found and together is not None and len(ops) > 1:  # only together: the fewest that are enough
        found = "+".join(fewest(ops, lambda some: together(some, how)))
    return f"{found}-{name}" if found else ""


def fewest(ops: tuple[str, ...], enough: Callable[[tuple[str, ...]], bool]) -> tuple[str, ...]:
    """Of `ops`, whose fixes together are `enough`, those that still are once each of the others is
    left out in turn (one run each)."""
    kept = list(ops)
    for o in ops:
        rest = tuple(x for x in kept if x != o)
        if rest and enough(rest):
            kept = list(rest)
    return tuple(kept)


def held(cause: str, kind: str, where: str, op: str, point: str,
         fixed_passes: Callable[[str | tuple[str, ...], str], bool]) -> str:
    """`cause` where its fix makes the program run through (one run: a candidate is held to the
    original's cause, it need not look for each), else what `of` says when it finds none."""
    kinds = looked_for(kind, where, point)
    if not kinds:
        return ""
    ops, how = fix(cause)
    if cause.rpartition("-")[2] in kinds and op not in ops and fixed_passes(ops, how):
        return cause
    return NONE if where == "forward" and NAN not in kind.split(",") else ""


def fix(cause: str) -> tuple[tuple[str, ...], str]:
    """The operations (one, or several fixed together) and the fix (`safe_ops.make_safe`'s `how`)
    that take the `cause` away."""
    ops, _, name = cause.rpartition("-")
    return tuple(o for o in ops.split("+") if o), KINDS[name][1]


def rounded(kind: str, op: str, fixed_passes: Callable[[str | tuple[str, ...], str], bool],
            together: Callable[[tuple[str, ...], str], bool] | None = None,
            among: Callable[[], set[str] | None] | None = None) -> str:
    """The rounding cause (`integer_pow-rounding`, `rounding`) of a NaN `op` made forward that no fix
    of `op` itself takes away, or "": the arguments as `of`'s."""
    return _of_kind(ROUNDING, op, fixed_passes, together or fixed_passes, among) if NAN in kind.split(",") else ""


def is_rounding(cause: str) -> bool:
    """Whether `cause` is float32's rounding (`rounded`)."""
    return cause.rpartition("-")[2] == ROUNDING


def by_float64_alone(cause: str) -> bool:
    """Whether `cause` is taken away by the program made float64 as it is (`rounding`, no operation
    named): its float32 values must become float64 with it, as the program's did."""
    return cause == ROUNDING
