"""The origin of a replayed call's non-finite value, as the job's runs find a program's
(`reducer.faults.origin`), by fixes patched into JAX in this process: the written-back script of the
call (`reducer.levels.jaxpr.nonfinite_replay`) run again with one operation made safe
(`reducer.faults.safe_ops`), or the formula written by hand computed by JAX's function
(`reducer.faults.stable_fix`), or the arithmetic before it in float64; which kinds of non-finite
value each run leaves (`_fixed_kinds`).
"""
from __future__ import annotations

import functools
import os

from oracles import nonfinite as nonfinite_kinds
from reducer.faults import cause as causes
from reducer.faults import nonfinite, stable_fix

SCRIPT = "replayed.py"


def with_origin(found: dict, text: str, outputs: dict, bound: set, wanted_cause: str = "") -> dict:
    """`found` with the origin the fixes say (`reducer.faults.origin`): the kinds of the call's
    non-finite values, the operation whose fix (the inner `where`) makes them all finite, and
    whether its forward fix alone takes one of them away (`in=forward`), and the one class of point
    that fix need act at (`point`), as the job's runs of a candidate are held to it; where none does,
    the formula written by hand whose stable form does (`fix`, `reducer.faults.stable_fix`; beside the
    operation, where the formula's terms underflowed: `log` of a `sum(exp(x))` that is 0); what made
    the 0 it turned non-finite (`cause`), looked for among the primitives the call binds (`bound`), or
    the `wanted_cause` alone (the job's origin's, which a candidate is held to; for a value made in a
    derivative, only that); where no fix of an
    operation does, the arithmetic whose float32 rounding put a NaN's input outside its domain
    (`_rounded`)."""
    from reducer.faults import forward_share, origin, safe_ops, stable_fix, suspects

    nans, both = (nonfinite.read(outputs[infs], text) for infs in (False, True))
    kinds, count = _fixed_kinds(text, "", "") or ("", None)
    found = {**found, "value": kinds or (origin.NAN if nans and nans["kind"] == origin.NAN else origin.INF)}
    mode = nans["in"] if nans and nans["in"] != "forward" else origin.derivative_mode(text)
    for op in suspects.candidates(found, both, nans):
        if _fixed_kinds(text, op, safe_ops.DERIVATIVE) != ("", 0):
            continue
        after, left = _fixed_kinds(text, op, safe_ops.FORWARD) or (None, None)
        where = forward_share.made_in(forward_share.taken_away(after, left, found["value"], count), mode)
        if where == "forward":  # the kinds of the values `op` made forward, its derivative taken away
            found["value"] = (_fixed_kinds(text, op, safe_ops.VALUE_ONLY) or ("",))[0] or found["value"]
        # the fix at one class's points alone removes them all only where no other class has any
        point = next((c for c in safe_ops.POINTS
                      if _fixed_kinds(text, op, f"{safe_ops.DERIVATIVE}@{c}") == ("", 0)), "")
        formula = _stable(text) if where == "forward" else ""
        look = functools.partial(causes.held, wanted_cause) if nonfinite_kinds.named(wanted_cause) else \
            causes.of if where == "forward" else None  # a derivative's, where the job's origin names one
        cause = look(found["value"], where, op, point, functools.partial(_fixed_passes, text, bound)) if look else ""
        return {**found, "op": op, "in": where, **({"point": point} if point else {}),
                **({"fix": formula} if formula else {}), **({"cause": cause} if cause else {})}
    formula = _stable(text)
    if formula:
        return {**found, "op": stable_fix.op_of(formula), "fix": formula}
    return _rounded(found, text, bound, wanted_cause) or found


def _fixed_passes(text: str, bound: set, op: str | tuple[str, ...], how: str) -> bool:
    """Whether the script `text` leaves no non-finite value with `op` (or each of several) made safe,
    each of them an operation the call binds (`bound`)."""
    from reducer.faults import safe_ops

    ops = (op,) if isinstance(op, str) else op  # the cast that `jnp.sum` of float32 ends with: bound when widened
    return all(bound & set(safe_ops.primitives(x)) or x == safe_ops.CAST for x in ops) and \
        _fixed_kinds(text, op, how) == ("", 0)


def _rounded(found: dict, text: str, bound: set, wanted_cause: str = "") -> dict | None:
    """`found` with the rounding cause of its NaN made forward (`reducer.faults.rounding_fix`: no fix
    of its operation takes it away, the arithmetic before it evaluated in float64 does), or the
    `wanted_cause` held alone; None when there is none (or the wanted cause is another kind)."""
    from reducer.faults import rounding_fix, safe_ops

    if found.get("in") != "forward" or (nonfinite_kinds.named(wanted_cause) and not causes.is_rounding(wanted_cause)):
        return None
    passes = functools.partial(_fixed_passes, text, bound)

    def widened(ops: tuple[str, ...]) -> tuple[bool, set[str]]:
        safe_ops.forget_widened()
        ran_through = _fixed_kinds(text, tuple(o for o in ops if safe_ops.known(o)), safe_ops.WIDEN) == ("", 0)
        return ran_through, safe_ops.widened_here()

    runs = rounding_fix.Runs(passes, widened)
    cause = causes.held(wanted_cause, found["value"], "forward", found["op"], "", passes) if wanted_cause else \
        causes.rounded(found["value"], found["op"], runs.passes, runs.together, runs.among)
    return {**found, "cause": cause, "fix": rounding_fix.ROUNDED} if causes.is_rounding(cause) else None


def _stable(text: str) -> str:
    """The first formula the script `text` writes by hand whose stable form leaves no non-finite value."""
    return next((f for f in stable_fix.formulas(text)
                 if _fixed_kinds(stable_fix.rewritten(text, f), "", "") == ("", 0)), "")


def _fixed_kinds(text: str, op: str | tuple[str, ...], how: str) -> tuple[str, int] | None:
    """The kinds of non-finite values the script `text` leaves in `g` when run here with `op` (or each
    of several) made safe (`safe_ops.make_safe`; none when `op` is ""), and how many elements hold
    one: ("", 0) when all are finite, None when it raises."""
    import jax

    from reducer.faults import checked_value, safe_ops

    wide = jax.config.jax_enable_x64
    if how in (safe_ops.WIDEN, safe_ops.NARROW):  # evaluated in float64: in the program made float64
        jax.config.update("jax_enable_x64", True)
    undos = [safe_ops.make_safe(o, how) for o in ((op,) if isinstance(op, str) else op) if o]
    undo = lambda: [u() for u in undos] + [jax.config.update("jax_enable_x64", wide)]  # noqa: E731
    jax.clear_caches()
    scope = {"__name__": "__main__", "__file__": os.path.abspath(SCRIPT)}
    try:
        exec(compile(text, os.path.abspath(SCRIPT), "exec"), scope)
        kinds, count = checked_value.tally(scope.get("g"))
        return checked_value.named(kinds), count
    except BaseException:
        return None
    finally:
        undo()
        jax.clear_caches()
