"""A non-finite value made inside a public call of JAX's that the program made, on inputs where the
call, computed right, gives a finite value: no fix of the program's takes it away, and the value is
the call's (`oracles.nonfinite.inside_call`), not the program's.

`jax.scipy.special.bessel_jn(jnp.ones(1), v=2)` is NaN in float32: its backward recurrence overflows.
Made float64, the program runs through, and a `mul` of float32 is where the value comes from
(`reducer.faults.float64_fix`); but with `mul`'s overflow of float32 brought back everywhere except
inside `bessel_jn`, the program still runs through (the overflow is the call's arithmetic:
`only_inside`), and with the call alone computed in float64, its result given back in float32, the
program runs through (`IN_FLOAT64`): the value it should give fits float32. The inner `where` around
`log` inside `jax.scipy.stats.chi2.logpdf(0.0, 2.0)` (its `0 * log(0)`) takes a NaN away only there,
and with the call computed by SciPy's `chi2.logpdf` the program runs through (`BY_NAMESAKE`). That
way of computing the call right is the failure's `fix`, and every candidate must run through with it
(`reducer.faults.origin`), so that its check still passes once the call is right.

Still the program's: `jax.grad(jnp.linalg.norm)` at 0 (the `where` acts inside `norm`, but its
derivative there is not finite in float64 either, and no namesake runs under a derivative: the
program's fix is a `where` around the call's input), and `jax.scipy.special.gamma(40.0)`, whose
overflow is inside the call but whose value, 2e46, float32 cannot hold.
"""
from __future__ import annotations

from oracles.nonfinite import BY_NAMESAKE, CALL_RIGHT, IN_FLOAT64
from reducer.faults import CutShort, Fault, float64_fix, nonfinite, numpy_twins, within_call
from reducer.faults.named_origin import NO_CALL, NO_FIX, refused

#: what each way is, in words
WORDS = {IN_FLOAT64: "in float64, its result given back in float32", BY_NAMESAKE: "by its NumPy or SciPy namesake"}


def call_of(guessed: dict | None, op: str) -> str:
    """The public call JAX's checks place the value inside (`guessed`, `nonfinite.located`), where it is
    not the operation `op` itself; "" where none."""
    call = (guessed or {}).get("from") or ""
    return call if call not in ("", op, (guessed or {}).get("op")) else ""


def line(call: str, right: str) -> str:
    """The statement, run before a program's first, that computes JAX's function `call` right."""
    if right == BY_NAMESAKE:
        return numpy_twins.line((call,))
    return f"from reducer.faults.call_fix import in_float64 as _reducer_in_float64; _reducer_in_float64({call!r})"


def the_calls(judge, program: str, call: str, op: str, how: str, kind: str, reached: tuple | None) -> str:
    """How `call` computed right makes the program run through (`right_way`), where `op`'s fix (`how`:
    the inner `where` or float64) acts only inside JAX's public function `call` (`only_inside`); ""
    where it does not, or either is not known. `judge`: the `reducer.faults.origin.ValueOrigin`
    whose runs these are."""
    try:
        return right_way(judge, program, call, reached=reached) \
            if call and only_inside(judge, program, call, op, how, kind, reached) else ""
    except CutShort:  # not known (a run timed out): the fix stays the program's, as it was found
        return ""


def only_inside(judge, program: str, call: str, op: str, how: str, kind: str, reached: tuple | None) -> bool:
    """Whether `op`'s fix takes the value away only where `call` binds `op`: the inner `where` left out
    of the call does not make the program run through; float64 does with `op`'s overflow of float32
    brought back everywhere but in the call."""
    if how == float64_fix.WIDE:
        return not float64_fix.brought_back(judge, program, op, kind, reached, outside=call)
    return not judge.passing(program, op, how, reached, outside=call)[0]


def held(judge, program: str, fault: Fault | None) -> Fault | None:
    """A candidate's `fault` held to the public call the original's value is made inside (`judge.call`,
    `judge.called`): JAX's checks must place its value there too, and it must run through with the
    call computed the way that took the original's away (`judge.right`), or get past its check so
    where the original only got past its own; the fault of the guard it fails, else `fault`."""
    if fault is None:
        return None
    if judge.call and dict(fault.fields).get("from") != judge.call:
        return refused(NO_CALL, f"The candidate's value is no longer made inside `{judge.call}`")
    if judge.right and "fix" in judge.guards and not runs_right(
            judge, program, judge.called, judge.right, judge.stopped(program) if judge.later else None):
        return refused(NO_FIX, f"The candidate does not run through with `{judge.called}` computed "
                               f"{WORDS[judge.right]}")
    return fault


def right_way(judge, program: str, call: str, forward: bool = True, reached: tuple | None = None) -> str:
    """The first way of computing `call` right (`CALL_RIGHT`) with which the program runs through, or
    gets past its check where it failed (`reached`, where given: a training step whose loss the call
    computed right is finite, but whose gradient, JAX's derivative of the call, makes the next step's
    NaN); "" where none does. For a value made in a derivative (not `forward`), in float64 alone: a
    namesake has no derivative."""
    tried = CALL_RIGHT if forward else (IN_FLOAT64,)
    try:
        return next((right for right in tried if runs_right(judge, program, call, right, reached)), "")
    except CutShort:
        return ""


def runs_right(judge, program: str, call: str, right: str, reached: tuple | None = None) -> bool:
    """Whether `program` runs through with `call` computed the way `right` says, or, where `reached`
    (`checked_value.stopped_at`) is given, gets past its check where it failed without it."""
    ok, later = judge.through(nonfinite.first_of(program, line(call, right)), reached)
    judge.later = judge.later or bool(later)  # then candidates are held to getting past their checks too
    return ok


def in_float64(name: str):
    """Put, in place of each of JAX's public functions named `name`, one computed in float64 on its
    floating inputs, its results given back in the dtypes JAX's function gives (run in the candidate's
    process: its values beyond float32's range become infinite, as float32 would make them); returns
    what undoes it."""
    return within_call.replace(name, _in_float64)


def _in_float64(function):
    def computed(*args, **kwargs):
        import jax
        import jax.numpy as jnp
        import numpy as np
        from jax._src.config import enable_x64

        shapes = jax.eval_shape(function, *args, **kwargs)

        def wide(value):
            floating = isinstance(value, (jax.Array, np.ndarray, np.generic, float)) and \
                jnp.issubdtype(jnp.result_type(value), jnp.floating)
            return jnp.asarray(value, jnp.float64) if floating else value

        with enable_x64(True):
            out = function(*jax.tree_util.tree_map(wide, args), **jax.tree_util.tree_map(wide, kwargs))
            return jax.tree_util.tree_map(lambda o, s: jnp.asarray(o).astype(s.dtype), out, shapes)

    return computed


def evidence(call: str, how: str, right: str) -> str:
    """Why the value is the call's, for the log."""
    fix = "float64" if how == float64_fix.WIDE else "the inner `where`"
    return (f"the value is made inside `{call}`: {fix} takes it away only inside the call (no fix of the program's own "
            f"code does), and with `{call}` computed {WORDS[right]} the program runs through: held where JAX's "
            f"checks place it, inside `{call}`, and to running through with `{call}` computed so")
