"""Where a non-finite value that the program checks comes from, held by the fix that takes it away.

JAX's own checks (`reducer.faults.nonfinite`) name the first NaN or Inf a run makes, which need not be
the one the program checks: in `where(p > 0, p * log(p), 0)` the forward `log(0)` is the first
`-inf`, masked, while the checked NaN is made in the gradient. So the origin of the failing value is
what a counterfactual says:

- its kind (`value`): `nan` when a run with JAX's NaN checks stops on a NaN, else `inf`;
- its operation (`op`) and transformation (`in`): the operation whose fix makes the program run
  through (`reducer.faults.safe_ops`): its forward value made finite (`in=forward`), else its value
  and derivative made finite by the inner `where` (`in=grad` or `jvp`, the program's derivative).
  The operations tried are those JAX's checks named, in the order they met them;
- for an Inf made forward, its `cause`: the operation whose underflow to 0 it came from (`exp` in a
  softmax that `log` reads), the one whose underflow fix makes the program run through, or none.

Every candidate is then held to that origin: it must fail as it is, run through with the same fix,
still fail with only the forward value fixed when the original needed the derivative fixed, and
fail on a value of the same kind. A candidate whose check reads a constant, a random number, NumPy
alone or another operation's value does not run through with the fix; a forward `-inf` in place of a
gradient's NaN runs through with the forward fix alone; an `inf` in place of a NaN is another kind.
When no fix is found, the origin is held the way JAX's checks name it (`nonfinite.NonFiniteValues`)
and the log says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from oracles.outcome import RunResult, Signature
from reducer.faults import CutShort, Fault, nonfinite, safe_ops

#: the kind of the checked value when the run under JAX's NaN checks meets no NaN
NAN, INF = "nan", "inf"
NO_FIX = "unfixed"  # the `op` of a candidate that the original's fix does not make run through


@dataclass(frozen=True)
class Origin:
    """The failing value's kind, the operation that made it and the transformation it was made in."""

    value: str
    where: str
    op: str
    via: str = ""
    cause: str = ""  # the operation whose underflow made the 0 that `op` turned into an Inf

    def fields(self) -> tuple[tuple[str, str], ...]:
        made_forward = self.value == INF and self.where == "forward"
        cause = (("cause", f"{self.cause}-underflow" if self.cause else "none"),) if made_forward else ()
        return (("value", self.value), ("in", self.where), ("op", self.op), *cause, ("from", self.via or self.op))

    @classmethod
    def of(cls, sig: Signature) -> "Origin | None":
        if not sig.get("value") or not sig.get("op"):
            return None
        cause = (sig.get("cause") or "").removesuffix("-underflow")
        return cls(sig.get("value"), sig.get("in"), sig.get("op"), sig.get("from") or "",
                   "" if cause == "none" else cause)


def fix_line(op: str, how: str) -> str:
    """The statement, run before the program's first, that makes `op` safe (`safe_ops.make_safe`)."""
    return f"from reducer.faults.safe_ops import make_safe as _reducer_safe; _reducer_safe({op!r}, {how!r})"


def fixed(program: str, op: str, how: str) -> str:
    """`program` with `op` made safe before it runs (its lines where they were)."""
    return nonfinite.first_of(program, fix_line(op, how))


def derivative_mode(program: str) -> str:
    """The mode of the derivative the program takes (the first transformation it names), `grad` when
    it names none (a library's training step)."""
    m = nonfinite.TRANSFORMS.search(program)
    return nonfinite.MODES.get(m.group(1), "grad") if m else "grad"


def candidates(*found: dict | None) -> list[str]:
    """The operations worth fixing, once each, in the order JAX's checks met them."""
    names = [n for f in found if f for n in (f.get("op"), f.get("prim")) if n]
    return [n for n in dict.fromkeys(names) if n not in nonfinite.SPREADING and safe_ops.known(n)]


class ValueOrigin:
    """The localiser of a checked non-finite value's origin; `run(source)` runs a program as
    candidates run. The first `locate` establishes the origin (or `expect` gives it); every later one
    holds a candidate to it."""

    fields = ("value", "in", "op", "from")

    #: what a candidate is held to, each a guard the loophole tests switch off one at a time:
    #: it runs through with the original's fix; it does not with the forward fix alone when the
    #: original needed the derivative fixed; its value is of the same kind; it runs through when the
    #: underflow the original's Inf came from is fixed
    GUARDS = ("fix", "transformation", "kind", "cause")

    def __init__(self, run: Callable[[str], RunResult], log: Callable[[str], None] = lambda line: None,
                 guards: tuple[str, ...] = GUARDS):
        self.run, self.log, self.guards = run, log, guards
        self.origin: Origin | None = None
        self.unfixed = False  # no fix found for the original: held as JAX's checks name it

    def expect(self, sig: Signature) -> None:
        self.origin = Origin.of(sig)
        self.unfixed = self.origin is None

    def _ran(self, program: str) -> RunResult:
        done = self.run(program)
        if done.timed_out:
            raise CutShort("a run to find the non-finite value's origin timed out")
        return done

    def _passes(self, program: str, op: str, how: str) -> bool:
        return self._ran(fixed(program, op, how)).returncode == 0

    def _checked(self, program: str, infs: bool) -> str:
        """What `program` prints under JAX's NaN checks (and its Inf checks too, with `infs`)."""
        return self._ran(nonfinite.with_checks(program, infs=infs)).output

    def _kind(self, program: str, output: str | None = None) -> str:
        found = nonfinite.read(output if output is not None else self._checked(program, False), program)
        return NAN if found and found["kind"] == NAN else INF

    def locate(self, program: str, run: RunResult | None, signature: Signature | None) -> Fault | None:
        if self.unfixed:
            return self._as_checks_name_it(program)
        if self.origin is None:
            return self._establish(program)
        return self._hold(program)

    def _establish(self, program: str) -> Fault | None:
        outputs = {infs: self._checked(program, infs) for infs in (False, True)}
        kind = self._kind(program, outputs[False])
        nans, both = (nonfinite.read(outputs[infs], program) for infs in (False, True))
        guessed = nonfinite.located(outputs.__getitem__, program)
        for op in candidates(guessed, both, nans):
            for how in (safe_ops.FORWARD, safe_ops.DERIVATIVE):
                if self._passes(program, op, how):
                    where = "forward" if how == safe_ops.FORWARD else (
                        nans["in"] if nans and nans["in"] != "forward" else derivative_mode(program))
                    via = (guessed or {}).get("from", op)
                    self.origin = Origin(kind, where, op, via, self._cause(program, kind, where, op))
                    found = {"op": op, "from": via, "in": where, "kind": kind,
                             "prim": (nans or both or {}).get("prim", "")}
                    return Fault(op, self.origin.fields(), _evidence(found, how))
        self.unfixed = True
        self.log("no fix of a single operation makes the program run through: the non-finite value is held "
                 "where JAX's checks first meet it, and to its kind")
        return self._as_checks_name_it(program, outputs)

    def _as_checks_name_it(self, program: str, outputs: dict | None = None) -> Fault | None:
        """The value's kind, and where JAX's checks place it (`nonfinite.located`)."""
        outputs = outputs or {infs: self._checked(program, infs) for infs in (False, True)}
        found = nonfinite.located(outputs.__getitem__, program)
        if found is None:
            return None
        fields = (("value", self._kind(program, outputs[False])),) + tuple((k, found[k]) for k in nonfinite.NonFiniteValues.fields)
        return Fault(found["op"], fields, nonfinite.evidence(found))

    def _cause(self, program: str, kind: str, where: str, op: str) -> str:
        """For an Inf made forward, the operation whose underflow to 0 made it (`exp` in a softmax
        whose `log` is `-inf`): the first whose underflow fix makes the program run through."""
        if kind != INF or where != "forward":
            return ""
        return next((o for o in safe_ops.UNDERFLOWING if o != op and self._passes(program, o, safe_ops.UNDERFLOW)), "")

    def _hold(self, program: str) -> Fault:
        """The candidate's origin as far as the original's fix tells it: the first difference found
        ends the look (each costs a run)."""
        origin = self.origin
        how = safe_ops.FORWARD if origin.where == "forward" else safe_ops.DERIVATIVE
        if "fix" in self.guards and not self._passes(program, origin.op, how):
            return _fault(origin, op=NO_FIX)
        if ("transformation" in self.guards and how == safe_ops.DERIVATIVE
                and self._passes(program, origin.op, safe_ops.FORWARD)):
            return _fault(origin, where="forward")
        kind = self._kind(program) if "kind" in self.guards else origin.value
        if kind != origin.value:
            return _fault(origin, value=kind)
        if "cause" in self.guards and origin.cause and not self._passes(program, origin.cause, safe_ops.UNDERFLOW):
            return _fault(origin, cause="")
        return _fault(origin)


def _fault(origin: Origin, **changed: str) -> Fault:
    seen = Origin(**{**origin.__dict__, **changed})
    return Fault(seen.op, seen.fields(), "")


def _evidence(found: dict, how: str) -> str:
    fix = ("its forward value made finite" if how == safe_ops.FORWARD
           else "its input kept inside its domain where its value or derivative is not finite (the inner `where`)")
    kind = "a NaN" if found["kind"] == NAN else "an Inf"
    return (f"The program checks {kind}; it runs through with `{found['op']}` fixed ({fix}), so that is where the "
            f"value comes from. " + nonfinite.evidence(found))
