"""The fix of a value that float32 cannot hold, where no inner `where` takes it away: an overflow.

A hand-written softplus `jnp.log(1 + jnp.exp(x))` is `inf` at `x = 100` in float32 and 100 in
float64; `exp` is not outside its domain there, so no inner `where` (`reducer.faults.safe_ops`)
fixes it, and a program that checks it against a NumPy reference fails with `+inf`. Its fix is the
operation at its origin computed in float64: in the program made float64 (`jax_enable_x64`), that
operation evaluated in float64 (`safe_ops.WIDEN`, its result kept float64, even where its inputs stay
float32, as a Flax layer's parameters do) runs through, and with its own values beyond float32's
range made infinite (`safe_ops.NARROW`, the rest of it still float64) fails again: `exp`, not the
`log` that passed its `inf` on.

A candidate is then held to both sides, each a guard of `reducer.faults.origin.ValueOrigin`: it
passes with the origin's operation in float64 (`fix`: an `exp(19909.0)`, `inf` in float64 too, does
not; nor does a constant, a random draw or NumPy alone), and fails again with the operation's own
overflow alone (`precision`: another operation's overflow, `jnp.square(1e20)` for an `exp`, made
finite by float64 literals alone, or one after it that the operation's float64 values reach,
`jnp.square(jnp.exp(50.0))`, does not). The transformation (`in`) is where JAX's checks meet the
first Inf, recorded; a candidate's is held by its kind of value, read of what the operation made
forward with its derivative taken away (an `inf` that `jax.grad(jnp.exp)(100.0)` reads is its
derivative's, not a forward value's).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from oracles import nonfinite as nonfinite_kinds
from reducer.faults import checked_value, nonfinite, safe_ops

#: the signature's `fix` for an origin found so
WIDE = "float64"
#: the operations tried after those JAX's checks name: those whose result overflows from finite inputs,
#: those that can only overflow first (an `add` evaluated in float64 passes float64 on to an `exp`)
OVERFLOWING = ("exp", "cosh", "sinh", "expm1", "integer_pow", "pow", "mul", "div", "add", "sub")
#: the line, run before the program, that makes it float64
X64 = "import jax as _reducer_jax; _reducer_jax.config.update('jax_enable_x64', True)"
#: the `op` of a candidate whose failure does not come back with the origin's operation in float32
ELSEWHERE = "elsewhere"


def widened(program: str, op: str | tuple[str, ...] = "", how: str = safe_ops.WIDEN, outside: str = "") -> str:
    """`program` made float64 before it runs, `op` (when named; or each of several) evaluated in
    float64 (`how` WIDEN) or in float32 (NARROW), but inside JAX's public function named `outside`."""
    ops = [o for o in ((op,) if isinstance(op, str) else op) if o]
    return nonfinite.first_of(program, "; ".join([X64, *(safe_ops.line(o, how, outside) for o in ops)]))


def origin_op(judge, program: str, named: list[str], kind: str, reached: tuple | None) -> str:
    """The operation at the origin of the original's failing value of `kind`: made float64, the
    program runs through with it in float64, and fails again with its own overflow of float32 alone;
    the operations JAX's checks `named` first. Where the program made float64 runs through as it is,
    only the second is asked of each. "" when no one operation does both. `judge`: the `ValueOrigin`
    whose runs these are."""
    ops = [op for op in dict.fromkeys([*named, *OVERFLOWING]) if safe_ops.known(op)]
    whole = judge.passing(program, "", WIDE, reached)

    def fixed_by(op: str) -> tuple | None:
        ok, later = whole if whole[0] else judge.passing(program, op, WIDE, reached)
        return (later,) if ok and brought_back(judge, program, op, kind, reached) else None

    found, how = first_in_order(ops, fixed_by)
    if found and how[0] is not None:
        judge.later = how[0]
    return found


def first_in_order(items: list, test, jobs: int = 2) -> tuple:
    """The first of `items` (in order) whose `test` gives something, and what it gave; ("", None)
    when none does. Up to `jobs` tests run side by side, each a run of the program or two: one
    after another they were most of the time a value failure's origin took to establish."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for start in range(0, len(items), jobs):
            batch = items[start:start + jobs]
            for item, got in zip(batch, list(pool.map(test, batch))):
                if got is not None:
                    return item, got
    return "", None


def brought_back(judge, program: str, op: str, kind: str, reached: tuple | None, outside: str = "") -> bool:
    """Whether `program`, made float64 with `op`'s own overflow of float32 alone (`safe_ops.NARROW`;
    but inside JAX's public function named `outside`), fails its check where it did (`reached`) on a
    value of `kind` (or on one the process cannot see): not elsewhere (a float64 product meeting a
    float32 parameter in `lax.max` raises a TypeError)."""
    done = judge.watched(widened(program, op, safe_ops.NARROW, outside))
    seen, stop = checked_value.kind_in(done.output), checked_value.stopped_at(done.output)
    elsewhere = reached is not None and (stop is None or stop[0] != reached[0])  # a TypeError of mixed types
    return done.returncode != 0 and not elsewhere and not checked_value.got_past(done.output, reached) and \
        (seen is None or nonfinite_kinds.covers(seen, kind))


def made_in(judge, program: str) -> str:
    """The transformation JAX's NaN and Inf checks place the first non-finite value in ("" when
    they meet none)."""
    return (nonfinite.read(judge.checked(program, True, again=True), program) or {}).get("in", "")


def held(judge, program: str, origin, reached: tuple | None) -> dict:
    """What a candidate that passes with the origin's operation in float64 and shows the original's
    kind of value shows other than the original's `origin` (the fields of `Origin` that differ; none
    when it is the same): it fails again with the operation's own overflow of float32 alone;
    `reached`: where the candidate stopped."""
    if "precision" in judge.guards and not brought_back(judge, program, origin.op, origin.value, reached):
        return {"op": ELSEWHERE}
    return {}


def evidence(op: str, kind: str) -> str:
    """Why the value comes from `op`, in the words of the log and the report's evidence."""
    return (f"The program checks a value float32 cannot hold ({kind}): made float64, it runs through with `{op}` "
            f"evaluated in float64 and fails again with `{op}` alone in float32, so that is where the value comes "
            f"from (an overflow, not a point outside `{op}`'s domain).")
