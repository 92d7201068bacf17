"""How a candidate is held to the origin of the original's failing value (`reducer.faults.origin`).

Every candidate is held to that origin: it must fail as it is, run through with the same fix
(kept to the original's class of point),
show every kind of value the original's check read (for a value made forward, of the values the
operation made with its derivative taken away: `log(0)`'s `-inf` is not the `+inf` of `-log(0)`,
even beside its derivative's `+inf`), be told the same transformation by the forward fix, for a
value whose 0 an underflow or an overflow made, run through with that fixed, and give the public calls only
inputs they document (`reducer.faults.contracts`: a Cholesky factor of a matrix that is not square
is not the NaN of a rank-deficient one). A candidate whose check reads a constant, a random number,
NumPy alone or another operation's value does not run through with the fix; a forward `-inf` in
place of a gradient's NaN runs through with the forward fix alone, and a forward NaN beside it
loses its part to that fix; an `inf` in place of a NaN is another kind; a `sqrt` outside its
domain in place of one at its edge does not run through with the fix kept to the edge; an overflow
of float64 too does not run through made float64, and another operation's overflow does not come
back with the origin's alone in float32; a value outside the domain written in (`sqrt(-1.0)`) does
not run through with the arithmetic whose rounding put the original's there evaluated in float64.
When no fix is found, the origin is held the way JAX's checks name it (`nonfinite.NonFiniteValues`)
and the log says so.

The first run, with the original's fix, is the cheap gate: most candidates that differ fail there.
The runs after it do not depend on one another's results, so they start at once
(`reducer.faults.ahead`), and the first difference found still ends the look.
"""
from __future__ import annotations

from oracles import nonfinite as nonfinite_kinds
from oracles.outcome import RunResult
from reducer.faults import Fault, checked_value, float64_fix, rounding_fix, safe_ops
from reducer.faults import cause as causes
from reducer.faults import named_origin as origins
from reducer.faults.forward_share import made_in, share_of

#: the fixes whose origin's transformation the forward fix of its operation tells
FORWARD_TOLD = (origins.FIX, origins.WIDE)


def held(judge, program: str) -> Fault:
    """The candidate's origin as far as the original's fix tells it: the first difference found
    ends the look (each costs a run). The fix is the original's: the inner `where` (it makes the
    forward value finite too), float64, or the stable form of a formula written by hand."""
    origin = judge.origin
    made_by = origin.op if origin.where == "forward" else ""
    read = {"kind", "transformation"} & set(judge.guards)
    past = judge.later and bool(read)  # getting past the check counts, as it did for the original
    point = origin.point if "domain" in judge.guards else ""
    with_fix = origins.fixed(program, *origins.remedy(origin, point))
    if "fix" in judge.guards and with_fix == program:
        return origins.as_fault(origin, op=origins.NO_FIX)  # the formula the original's fix rewrites is not here
    fix_run = (judge.watched(with_fix) if past else judge.ran(with_fix)) if "fix" in judge.guards else None
    stuck = fix_run is not None and fix_run.returncode != 0
    if stuck and not past:
        return origins.as_fault(origin, op=origins.NO_FIX)  # one run, where the original's fix ran through
    with judge.ahead.started(judge.run, _to_read(judge, program, origin, made_by, bool(read))):
        return _held(judge, program, origin, made_by, read, fix_run, stuck)


def _to_read(judge, program: str, origin, made_by: str, read: bool) -> list[str]:
    """What `_held` runs before it reads a result: started at once."""
    shown = origins.fixed(program, made_by, safe_ops.VALUE_ONLY) if made_by else program
    texts = [shown] if read else []
    forward = origin.fix in FORWARD_TOLD and "transformation" in judge.guards
    texts += [origins.fixed(program, origin.op, safe_ops.FORWARD)] if forward else []
    texts += [float64_fix.widened(program, origin.op, safe_ops.NARROW)] if origin.fix == origins.WIDE and \
        "precision" in judge.guards else []
    return [judge.run_text(text, watched=True) for text in texts]


def _held(judge, program: str, origin, made_by: str, read: set, fix_run: RunResult | None, stuck: bool) -> Fault:
    """The rest of `held`, once the candidate passed its first run (or past its check)."""
    kind, count, reached = judge.kind_of(program, made_by=made_by) if read else (origin.value, None, None)
    if stuck and not checked_value.got_past(fix_run.output, reached):
        return origins.as_fault(origin, op=origins.NO_FIX)
    if "kind" in judge.guards and not nonfinite_kinds.covers(kind, origin.value):
        return origins.as_fault(origin, value=kind)
    if origin.fix in FORWARD_TOLD and "transformation" in judge.guards:
        share = judge.forward_share_of(program, origin.op, origin.value, count, reached)
        if share != share_of(origin.where):
            return origins.as_fault(origin, where=made_in(share, origins.derivative_mode(program)))
    if origin.fix == origins.WIDE:
        return origins.as_fault(origin, **float64_fix.held(judge, program, origin, reached))
    if origin.fix == origins.ROUNDED and "operation" in judge.guards:
        return origins.as_fault(origin, **rounding_fix.held(judge, program, origin))
    if "cause" in judge.guards and origin.cause and origin.fix != origins.ROUNDED and \
            not judge.passing(program, *causes.fix(origin.cause), reached)[0]:  # ROUNDED: the fix's run held it
        return origins.as_fault(origin, cause="")
    return origins.as_fault(origin)
