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

An Inf made forward has a cause or `none`. A NaN made forward has one only where the operation at
its origin is at its pole (`0 * log(0)`), and none is named where none is found. A candidate is held
to the cause: it runs through (or past its check) with that operation fixed.
"""
from __future__ import annotations

from typing import Callable

from oracles.nonfinite import NAN, named
from oracles.nonfinite import NO_CAUSE as NONE
from reducer.faults import safe_ops

__all__ = ["NAN", "NONE", "named", "looked_for", "of", "held", "fix"]
UNDERFLOW, OVERFLOW = "underflow", "overflow"
#: each kind of cause: the operations that can make it, and the fix that takes it away
KINDS = {UNDERFLOW: (safe_ops.UNDERFLOWING, safe_ops.UNDERFLOW),
         OVERFLOW: (safe_ops.OVERFLOW_ONLY, safe_ops.DERIVATIVE)}
POLE = "pole"


def looked_for(kind: str, where: str, point: str) -> tuple[str, ...]:
    """The kinds of cause looked for, for a value of `kind` made `where` by an operation at `point`."""
    if where != "forward":
        return ()
    if NAN in kind.split(","):
        return (UNDERFLOW, OVERFLOW) if point == POLE else ()
    return (UNDERFLOW, OVERFLOW) if point == POLE else (UNDERFLOW,)


def of(kind: str, where: str, op: str, point: str, fixed_passes: Callable[[str, str], bool],
       together: Callable[[tuple[str, ...], str], bool] | None = None) -> str:
    """The cause (`exp-underflow`, `exp-overflow`), `none` for an Inf made forward with none, else "";
    `fixed_passes(operation, how)`: whether the program runs through with that fix; `together(operations,
    how)`: with all those fixed at once (one run that rules a kind of cause out, where each costs one)."""
    kinds = looked_for(kind, where, point)
    if not kinds:
        return ""
    if op in safe_ops.OVERFLOW_ONLY and NAN not in kind.split(","):
        return NONE  # its Inf is never a 0's
    for name in kinds:
        ops, how = KINDS[name]
        ops = tuple(o for o in ops if o != op)
        if together is not None and len(ops) > 1 and not together(ops, how):
            continue
        found = next((o for o in ops if fixed_passes(o, how)), "")
        if not found and together is not None and len(ops) > 1:  # only together: the fewest that are enough
            found = "+".join(fewest(ops, lambda some: together(some, how)))
        if found:
            return f"{found}-{name}"
    return "" if NAN in kind.split(",") else NONE


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
    return "" if NAN in kind.split(",") else NONE


def fix(cause: str) -> tuple[tuple[str, ...], str]:
    """The operations (one, or several fixed together) and the fix (`safe_ops.make_safe`'s `how`)
    that take the `cause` away."""
    ops, _, name = cause.rpartition("-")
    return tuple(ops.split("+")), KINDS[name][1]
