"""The origin of a NaN that float32's rounding made: a value outside an operation's domain that exact
arithmetic keeps inside it.

A one-pass variance `mean(x ** 2) - mean(x) ** 2` of a stuck sensor's readings (1013.25 plus noise
of 1e-3) is about 1e-6 in exact arithmetic; in float32 each square is rounded by up to 0.03, and the
difference can come out below 0: its `sqrt` is NaN. No fix of `sqrt` itself is the program's (its
value 0 there divides by 0 next), nor is the program made float64 (its readings stay float32), nor
`sqrt` evaluated in float64 (its input is already below 0). The fix is the arithmetic that made the
input evaluated in float64 (`reducer.faults.cause`: `integer_pow-rounding`, the first operation of
`safe_ops.ROUNDING` whose float64 values alone are enough, or the fewest that are together), and the
origin names it as its cause (`fix=float64-arithmetic`); where the program made float64 runs through
as it is (its data float64 then too), the cause is `rounding` alone, and a candidate's float32 values
are spelled as JAX's default float so that the fix makes them float64 as it made the program's.

The operation's forward fix does not tell its transformation here (its 0 divides by 0 next, and the
check reads a NaN again, made later): JAX's checks do, and a candidate is held to them too. So a
candidate fails as it is, runs through with the cause's operations evaluated in float64 (a
`sqrt(-1.0)` written in does not, nor a NumPy computation, nor a float32 constant below 0 before
any arithmetic), and JAX's checks meet its first NaN made forward by the same operation
(`reducer.faults.hold`).
"""
from __future__ import annotations

from typing import Callable

from reducer.faults import cause as causes
from reducer.faults import checked_value, float64_fix, nonfinite, safe_ops

#: the signature's `fix` for an origin found so
ROUNDED = "float64-arithmetic"


def found(judge, program: str, at: dict, kind: str, reached: tuple | None) -> str:
    """The rounding cause of the NaN `at` names (JAX's checks: its `op`, `in`), made forward, or "":
    whether the program runs through (or past its check, `reached`) with the arithmetic evaluated in
    float64. `judge`: the `ValueOrigin` whose runs these are."""
    if at.get("in") != "forward":
        return ""
    runs = Runs.of_script(judge, program, reached)
    return causes.rounded(kind, at["op"], runs.passes, runs.together, runs.among)


class Runs:
    """The runs a cause is looked for by (`causes.of`, `causes.rounded`): `passes(ops, how)`, whether
    the program runs through with those fixed; and `widened(ops)`, the same with `ops` evaluated in
    float64, and which of them the run evaluated so (those the program binds, None when unknown):
    that run, with every rounding operation at once, tells which are tried one by one (`among`).
    A script's runs (`of_script`) and a replayed call's (`levels.jaxpr.replay_origin`) are both so."""

    def __init__(self, passes: Callable[[str | tuple[str, ...], str], bool],
                 widened: Callable[[tuple[str, ...]], tuple[bool, set[str] | None]]):
        self.passes, self._widened = passes, widened
        self.bound: set[str] | None = None

    def together(self, ops: tuple[str, ...], how: str) -> bool:
        if how != safe_ops.WIDEN or len(ops) < 2:
            return self.passes(ops, how)
        ran_through, self.bound = self._widened(ops)
        return ran_through

    def among(self) -> set[str] | None:
        return self.bound

    @classmethod
    def of_script(cls, judge, program: str, reached: tuple | None) -> "Runs":
        """The runs of `program` with fixes, as `judge` (a `ValueOrigin`) runs them, through or past
        its check (`reached`); a widened run prints what it widened (`safe_ops.say_widened`)."""
        def widened(ops: tuple[str, ...]) -> tuple[bool, set[str] | None]:
            text = nonfinite.first_of(float64_fix.widened(program, ops, safe_ops.WIDEN), safe_ops.SAY_WIDENED)
            done = judge.watched(text) if reached else judge.ran(text)
            return done.returncode == 0 or checked_value.got_past(done.output, reached), \
                safe_ops.widened_in(done.output)

        return cls(lambda ops, how: judge.passing(program, ops, how, reached)[0], widened)


def held(judge, program: str, origin) -> dict:
    """The fields of the `origin` a candidate shows otherwise (none when the same): where JAX's checks
    meet its first NaN, and by which operation."""
    at = nonfinite.located(lambda infs: judge.checked(program, infs), program) or {}
    seen = {"op": at.get("op") or "none", "where": at.get("in") or "none", "via": at.get("from") or ""}
    return {k: v for k, v in seen.items() if v != getattr(origin, k) and not (k == "via" and not origin.via)}


def evidence(op: str, cause: str) -> str:
    """Why the value is `op`'s, in the words of the log and the report's evidence."""
    ops, _ = causes.fix(cause)
    arithmetic = f"with {', '.join(f'`{o}`' for o in ops)} evaluated in float64" if ops else "made float64"
    return (f"`{op}` gets an input where it is not finite (below 0 for `sqrt`, 0 for `log`) that exact arithmetic "
            f"keeps away from there: the program runs through {arithmetic}, so float32's rounding put it there (a "
            f"difference of nearly equal values cancels to the wrong sign or to 0: a one-pass variance "
            f"`mean(x ** 2) - mean(x) ** 2`, `1 - sigmoid(z)` at a large `z`).")
