"""The non-finite family (`nonfinite`): a check failing on a NaN or an Inf whose origin is known. Its
signature (`signature`), and what makes a run or a replay show the same failure: the kind of value
the check read (`covers`), where and by what it was made (`in`, `op`), the stable formula whose form
fixes it, a cause the origin names, and the class of point a fix had to clear (`held_fields`,
`same_point`, `same_replay`); whether the value is made inside a public call the program made, whose
owner's it then is (`inside_call`). Scripts are judged by `oracles.own_check.OwnCheck`, replays of a traced
call by `same_replay`; both read these.
"""
from __future__ import annotations

from oracles.base import Signature

NAN = "nan"
#: the `cause` of a value whose origin names none (as the origin writes it)
NO_CAUSE = "none"
#: the `fix` of a value made inside a public call that the call computed right takes away, in float64 (its
#: result given back in float32) or by its NumPy or SciPy namesake (`reducer.faults.call_fix`)
IN_FLOAT64, BY_NAMESAKE = "call-in-float64", "call-by-namesake"
#: the ways of computing a call right, in the order they are tried
CALL_RIGHT = (IN_FLOAT64, BY_NAMESAKE)
#: the fixes that are none of the program's own code: none found, or a call of JAX's computed right
NOT_THE_PROGRAMS = (NO_CAUSE, *CALL_RIGHT)
#: the formulas whose stable form is the fix a reproducer must show (`reducer.faults.stable_fix`)
STABLE_FORMULAS = ("softplus", "logaddexp", "logsumexp", "softmax", "log_sigmoid", "log_softmax")


def signature(kind: str, check: str, at: tuple[tuple[str, str], ...], shown: str) -> Signature:
    """The signature of a check failing on a NaN or an Inf whose operation at fault is known (`at`:
    `in`, `op`, `from`): the message no longer matters, where the value was made does."""
    title = f"{made_where(at)} fails the program's `{check}`"
    return Signature("nonfinite", (("type", kind), ("check", check), *at), title, shown)


def made_where(at: tuple[tuple[str, str], ...]) -> str:
    """Where a non-finite value was made (`at`: `value`, `in`, `op`, `from`), for a title: "A NaN from
    `log` under `grad`"."""
    where = dict(at)
    made = [m for m in where.get("in", "").split(",") if m]  # none where JAX's checks met nothing
    under = "".join(f" under `{m}`" for m in made if m != "forward")
    under = f", forward and{under}," if len(made) > 1 else under
    via = f" (through `{where.get('from')}`)" if where.get("from") not in ("", where.get("op")) else ""
    value = {"nan": "A NaN", "inf": "An Inf", "+inf": "A +Inf", "-inf": "A -Inf"}.get(where.get("value", ""),
                                                                                  "A non-finite value")
    return f"{value} from `{where.get('op')}`{via}{under}"


def covers(seen: str, wanted: str) -> bool:
    """Whether the kinds `seen` include every kind `wanted` (an `inf` of unknown sign is either)."""
    have = set(filter(None, seen.split(",")))
    have |= {"inf"} if have & {"+inf", "-inf"} else set()
    return bool(wanted) and set(wanted.split(",")) <= have


def inside_call(at) -> bool:
    """Whether a non-finite value (`at`, a mapping with `get`) is made inside a public call the program
    made (`from`: `bessel_jn`, whose `scan` makes the NaN) and no fix of the program's takes it away
    (`fix` none, or the call computed right: in float64, or by its namesake): the call is then where the
    failure is, and a candidate must still make that call, not its body written out (a recurrence of
    the program's own that overflows is another failure, and the program's: `reducer.faults.origin`).
    `from` is read from a traceback, and how it is read may change: it names the call, and is no part
    of the failure's identity."""
    return at.get("fix") in NOT_THE_PROGRAMS and \
        at.get("from") not in (None, "", NO_CAUSE, at.get("op"))


def programs_fix(at) -> bool:
    """Whether the fix that took a located value away (`at`, a mapping with `get`) is one of the program's
    own code (an inner `where`, float64, a stable formula): not none, nor a call computed right."""
    return at.get("fix") not in NOT_THE_PROGRAMS


def inside_call_words(at) -> str:
    """Why a value made inside a public call that no fix of the program's takes away is the call's
    (`inside_call`), in words for the report."""
    call, op = at.get("from"), at.get("op")
    value = made_where((("value", at.get("value")), ("op", op), ("from", op)))
    where = "forward computation" if at.get("in") == "forward" else f"derivative under `{at.get('in')}`"
    right = {IN_FLOAT64: f" With `{call}` alone computed in float64 (its result given back in float32), the "
                         f"program's check passes: the value `{call}` should give is finite in float32.",
             BY_NAMESAKE: f" With `{call}` computed by its NumPy or SciPy namesake, on the same values, the program's "
                          f"check passes: the namesake gives a finite value there."}.get(at.get("fix"), "")
    return (f"{value} is made inside `{call}`, on the values the program gives `{call}`, in the {where}; "
            f"no fix of the program's own code (an inner `where`, float64, a stable formula) takes it away, and the "
            f"reproducer keeps calling `{call}` itself.{right} This is JAX's to answer where these inputs are inside "
            f"`{call}`'s domain (finite, and where its documentation says it is defined); outside it, keep them in "
            f"(`jnp.clip`) before the call.")


def named(cause: str) -> bool:
    """Whether `cause` names an operation (not "" or `none`)."""
    return cause not in ("", NO_CAUSE)


def same_point(seen, wanted) -> bool:
    """Whether a replay's class of point (`seen`, a mapping with `get`) is the wanted one's. A replay
    that names another class is another failure; one whose outputs (more than the program's check
    reads: a value_and_grad's gradients too) no one class's fix clears names none, and the job's own
    origin holds its written-back script to the class (`reducer.faults.origin`)."""
    return seen.get("point") == wanted.get("point") or not (seen.get("point") and wanted.get("point"))


def held_fields(wanted) -> tuple[str, ...]:
    """The fields of a fault (`wanted`, a mapping with `get`) a replay must show as they are: where
    and by what it was made, the formula whose stable form fixes it, and a cause the origin names
    (naming none, the program may fail past its fix: not held)."""
    return ("in", "op") + (("fix",) if wanted.get("fix") in STABLE_FORMULAS else ()) \
        + (("cause",) if named(wanted.get("cause") or "") else ())


def same_replay(wanted: Signature, found: dict | None) -> tuple[bool, Signature | None]:
    """Whether what a replay found (`found`: its value, `in`, `op` …; None when it found nothing or
    timed out) is the wanted non-finite value, made in the same place; and what it showed."""
    if not found or "op" not in found:
        return False, None
    held = (("value",) if wanted.get("value") else ()) + held_fields(wanted)
    held += ("point",) if not same_point(found, wanted) else ()
    value = found.get("value", "")
    if wanted.get("value") and covers(value, wanted.get("value")):
        value = wanted.get("value")  # it shows the kinds the program's check did (and maybe more)
    found = {**found, "value": value, "fix": found.get("fix") or "none"}
    fields = tuple((k, (found.get(k) or NO_CAUSE) if k in held else wanted.get(k)) for k, _ in wanted.fields)
    seen = Signature("nonfinite", fields, wanted.title)
    return all(found.get(k) == wanted.get(k) for k in held), seen
