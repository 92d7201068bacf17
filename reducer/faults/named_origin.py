"""The origin of a failing non-finite value as a signature names it (`Origin`: its kind, operation,
transformation, class of point, cause and fix), the program with that fix applied (`fixed`), and a
candidate's fault where it differs (`as_fault`); `reducer.faults.origin` finds it, and
`reducer.faults.hold` holds candidates to it."""
from __future__ import annotations

from dataclasses import dataclass

from oracles.outcome import Signature
from reducer.faults import Fault, contracts, float64_fix, nonfinite, rounding_fix, safe_ops, saturated, stable_fix
from reducer.faults import cause as causes

#: the kind of the checked value when the run under JAX's NaN checks meets no NaN
NAN, INF = "nan", "inf"
NO_FIX = "unfixed"  # the `op` of a candidate that the original's fix does not make run through
INVALID = "invalid-input"  # the `op` of a candidate that gives a call an input its documentation rules out
NO_CALL = "call-not-made"  # the `op` of a candidate that no longer makes the public call the value is made inside
FIX = "inner-where"  # the signature's `fix`: the origin was found by it ("none": as JAX's checks name it)
WIDE = float64_fix.WIDE  # the signature's `fix` of an overflow: the origin in float64 (`float64_fix`)
#: the signature's `fix` of a value float32's rounding put outside the domain (`rounding_fix`)
ROUNDED = rounding_fix.ROUNDED
#: the line, run before the program, that prints the kinds of value its failing check read
WATCH = "from reducer.faults.checked_value import watch as _reducer_watch; _reducer_watch()"


@dataclass(frozen=True)
class Origin:
    """The failing value's kind, the operation that made it and the transformation it was made in."""

    value: str
    where: str
    op: str
    via: str = ""
    cause: str = ""  # what made the 0 that `op` turned into an Inf (`reducer.faults.cause`: `exp-underflow`)
    point: str = ""  # the one class of point (`safe_ops.POINTS`) the fix need act at: `edge` for `sqrt(0)`
    breaks_contract: bool = False  # the original gives a public call an input its documentation rules out
    fix: str = FIX  # what takes the value away: the inner `where`, float64 (WIDE), its cause's arithmetic in
    # float64 (ROUNDED) or a stable formula

    def fields(self) -> tuple[tuple[str, str], ...]:
        made_forward = self.where == "forward"
        cause = (("cause", self.cause or causes.NONE),) if made_forward and NAN not in self.value.split(",") else \
            (("cause", self.cause),) if causes.named(self.cause) else ()
        point = (("point", self.point),) if self.point else ()
        return (("value", self.value), ("in", self.where), ("op", self.op), *point, *cause, ("fix", self.fix),
                ("from", self.via or self.op), *contracts.field(self.breaks_contract))

    @classmethod
    def of(cls, sig: Signature) -> "Origin | None":
        """The origin a signature names; None when it was not established by a fix."""
        if not sig.get("value") or not sig.get("op") or \
                sig.get("fix") not in (FIX, WIDE, ROUNDED, *stable_fix.FORMULAS):
            return None
        cause = sig.get("cause") or ""
        return cls(sig.get("value"), sig.get("in"), sig.get("op"), sig.get("from") or "",
                   cause if causes.named(cause) else "", sig.get("point") or "",
                   sig.get("contract") == contracts.BROKEN, sig.get("fix"))


def fixed(program: str, op: str | tuple[str, ...], how: str, outside: str = "") -> str:
    """`program` with `op` (or each of several) made safe before it runs (its lines where they were);
    with `how` WIDE, the program made float64, `op` (when named) evaluated in float64 (`float64_fix`);
    with `how` one of `stable_fix.FORMULAS`, that formula computed by JAX's function (`program` itself
    where it writes none, but for a sigmoid's `log`, followed as the program runs: `saturated`); `op`'s
    fix left out of JAX's public function named `outside`, where one is named (`safe_ops.make_safe`)."""
    if how in stable_fix.FORMULAS:  # where no expression writes it, a sigmoid's log followed as it runs
        dynamic = nonfinite.first_of(program, saturated.LINE) if how == saturated.FIX else program
        return stable_fix.rewritten(program, how) or dynamic
    if how == WIDE:
        return float64_fix.widened(program, op, outside=outside)
    ops = (op,) if isinstance(op, str) else op
    return nonfinite.first_of(program, "; ".join(safe_ops.line(o, how, outside) for o in ops))


def remedy(origin: Origin, point: str = "") -> tuple[str | tuple[str, ...], str]:
    """What `fixed` is given to apply the origin's fix: the operation (or its cause's operations,
    for ROUNDED) and how, the inner `where` kept to the class of point `point` where one is given."""
    if origin.fix == ROUNDED:
        return causes.fix(origin.cause)
    if origin.fix != FIX:
        return origin.op, origin.fix
    return origin.op, f"{safe_ops.DERIVATIVE}@{point}" if point else safe_ops.DERIVATIVE


def derivative_mode(program: str) -> str:
    """The mode of the derivative the program takes (the first transformation it names), `grad` when
    it names none (a library's training step)."""
    m = nonfinite.TRANSFORMS.search(program)
    return nonfinite.MODES.get(m.group(1), "grad") if m else "grad"


def as_fault(origin: Origin, **changed: str) -> Fault:
    """The fault of a candidate whose origin is `origin` but for the fields `changed`."""
    seen = Origin(**{**origin.__dict__, **changed})
    return Fault(seen.op, seen.fields(), "")


def refused(op: str, why: str) -> Fault:
    """The fault of a candidate a guard refuses before its origin is known: `op` (`NO_FIX`, `INVALID`,
    `NO_CALL`) says which, and every other field is empty."""
    return Fault(op, (("value", ""), ("in", ""), ("op", op), ("fix", "none"), ("from", "")), why)
