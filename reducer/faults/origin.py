"""Where a non-finite value that the program checks comes from, held by the fix that takes it away.

JAX's own checks (`reducer.faults.nonfinite`) name the first NaN or Inf a run makes, which need not
be the one the program checks: in `where(p > 0, p * log(p), 0)` the forward `log(0)` is the first
`-inf`, masked, while the checked NaN is made in the gradient. So the origin of the failing value is
what a counterfactual says:

- its kind (`value`): `nan`, `+inf`, `-inf` (several joined by commas) among the values the failing
  check reads (`reducer.faults.checked_value`); where it reads none the process can see, `nan` when
  a run with JAX's NaN checks stops on a NaN, else `inf`. A candidate's values must show every kind
  the original's did;
- its operation (`op`): the operation whose fix, the inner `where` (`reducer.faults.safe_ops`: its
  value and derivative made finite), makes the program run through, or makes its check pass where it
  failed (`checked_value.got_past`: a training loop's next step may then fail on what another
  operation left in the parameters). The operations tried are those JAX's checks named, in the order
  they met them, then a few the program calls whose derivative is infinite somewhere (an `arccos`
  at a clip's edge, when JAX's checks first meet a masked NaN elsewhere: `reducer.faults.suspects`).
  Where none is found, an overflow's: made float64, the program runs through with the operation in
  float64 and fails again with it in float32 (`fix=float64`, `reducer.faults.float64_fix`); where
  float64 overflows too, a formula written by hand computed by JAX's function (`fix=logsumexp`,
  `reducer.faults.stable_fix`), as for a `log` of a sigmoid that no float keeps off 1
  (`fix=log_sigmoid`; followed from the sigmoid to the `log` as the program runs where no one
  expression writes it: `reducer.faults.saturated`); where neither, a NaN that float32's rounding
  put outside the domain of the operation JAX's checks name: the program runs through with the arithmetic before it
  evaluated in float64 (`fix=float64-arithmetic`, its operations the `cause`,
  `reducer.faults.rounding_fix`);
- its transformation (`in`): `forward` when making the operation's forward value finite alone takes
  the checked value away (the program runs through, or its check then fails on a value of another
  kind: a training loop's NaN parameters after the loss's Inf is gone), `forward,grad` when it takes
  some of the checked non-finite elements away and not all (a forward NaN read beside the gradient's:
  the `where` trap with its `where` gone), else the derivative the program takes (`grad`, `jvp`);
- its class of point (`point`): where the operation's fix need act, when one class is enough: the edge
  of its domain (`edge`: `sqrt(0)`, finite, with an infinite derivative), a pole (`pole`: `log(0)`,
  a division by 0) or the outside of its domain (`outside`: `sqrt(-1)`), each told by the fix kept to
  that class;
- for a value made forward, or in a derivative at a pole or an edge, its `cause`
  (`reducer.faults.cause`): what made the 0 its operation turned into an Inf, the `exp` of a softmax
  that underflowed (`exp-underflow`) or of a sigmoid written by hand that overflowed
  (`exp-overflow`), float32's rounding (`1 - sigmoid(z)` rounded to 0 under `log`'s derivative), the
  first whose fix makes the program run through, or none.

Every candidate is then held to that origin (`reducer.faults.hold`).
"""
from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from oracles import nonfinite as nonfinite_kinds
from oracles.outcome import RunResult, Signature
from reducer.faults import (CutShort, Fault, call_fix, checked_value, contracts, float64_fix, forward_share,
                            nonfinite, rounding_fix, safe_ops, saturated, stable_fix, suspects)
from reducer.faults import cause as causes
from reducer.faults import hold
from reducer.faults.ahead import Ahead
from reducer.faults.forward_share import made_in, taken_away
from reducer.faults.named_origin import (FIX, INF, INVALID, NAN, ROUNDED, WATCH, WIDE, Origin, derivative_mode,
                                         fixed, refused)


class ValueOrigin:
    """The localiser of a checked non-finite value's origin; `run(source)` runs a program as
    candidates run. The first `locate` establishes the origin (or `expect` gives it); every later one
    holds a candidate to it."""

    fields = ("value", "in", "op", "fix", "from")

    #: what a candidate is held to, each a guard the loophole tests switch off one at a time:
    #: it runs through with the original's fix; its value is of the same kind; the forward fix alone
    #: tells the same transformation; it runs through when the underflow the original's Inf came from
    #: is fixed; it gives the public calls only inputs they document (`contracts`); it runs through
    #: with the fix kept to the class of point the original's needed (`Origin.point`: the edge of the
    #: domain, `sqrt(0)`, is not its outside, `sqrt(-1)`); for an overflow that float64 fixes
    #: (`float64_fix`), it fails again with the operation alone in float32 (`precision`); for a value
    #: float32's rounding put outside the domain (`rounding_fix`), JAX's checks meet its first NaN made
    #: by the same operation (`operation`); for a value made inside a public call that no fix of the
    #: program's takes away (`oracles.nonfinite.inside_call`), it still makes that call (`call`)
    GUARDS = ("fix", "kind", "transformation", "cause", "contract", "domain", "precision", "operation", "call")

    def __init__(self, run: Callable[[str], RunResult], log: Callable[[str], None] = lambda line: None,
                 guards: tuple[str, ...] = GUARDS):
        self.run, self.log, self.guards = run, log, guards
        self.origin: Origin | None = None
        self.unfixed = False  # no fix found for the original: held as JAX's checks name it
        self.contracts = False  # candidates' runs check the public calls' inputs (once the original is known)
        self.breaks = False  # the original breaks a contract: recorded in the signature
        self.later = False  # the original's fix got its check past where it failed, not through the program
        self._stop: tuple[str, tuple | None] = ("", None)  # the last program `kind_of` watched, where it stopped
        self.ahead = Ahead()  # a candidate's runs started before they are read (`hold.held`)
        # JAX's checks met the original's value only op by op (a check inside a compiled call stopped it
        # first: Equinox's `error_if`); None where not known (a resumed reduction's)
        self.eager_checks: bool | None = None
        self.called = ""  # the public call the value is made inside, where no fix of the program's takes it away
        self.call = ""  # that call, where every candidate must still make it (the guard `call`)
        self.right = ""  # how that call computed right takes the value away (`call_fix`), which every candidate
        # must run through with (the guard `fix`)

    def expect(self, sig: Signature) -> None:
        self.right = sig.get("fix") if sig.get("fix") in nonfinite_kinds.CALL_RIGHT else ""
        self._held_to_call(dict(sig.fields))
        self.origin = Origin.of(sig)
        self.unfixed = self.origin is None
        self.later = True  # not known from a signature: a candidate may get past its check the way the original did
        self.breaks = sig.get("contract") == contracts.BROKEN
        self.contracts = "contract" in self.guards and not self.breaks

    def ran(self, program: str) -> RunResult:
        text = self.run_text(program)
        done = self.ahead.take(text) or self.run(text)
        if done.timed_out or done.cancelled:
            raise CutShort("a run to find the non-finite value's origin timed out or was cancelled")
        broken = contracts.broken(done.output) if self.contracts else None
        if broken:
            raise _Invalid(broken)
        return done

    def passes(self, program: str, op: str, how: str, reached: tuple | None = None) -> bool:
        """Whether `program` runs through with `op` made safe; with `reached` (where the program
        stopped without the fix, `checked_value.stopped_at`), also when its check passes where it
        failed and the program stops later (a training loop's next step: `later` is then set)."""
        ok, later = self.passing(program, op, how, reached)
        self.later = self.later if later is None else later
        return ok

    def passing(self, program: str, op: str, how: str, reached: tuple | None = None,
                outside: str = "") -> tuple[bool, bool | None]:
        """`passes`, and what it sets `later` to (None: left as it is), without setting it: runs of
        several fixes side by side; the fix left out of JAX's public function `outside` where named."""
        return self.through(fixed(program, op, how, outside), reached)

    def through(self, text: str, reached: tuple | None = None) -> tuple[bool, bool | None]:
        """Whether `text` runs through, or, with `reached`, gets its check past where it failed; and
        whether it only got past (None where `reached` is not given)."""
        if reached is None:
            return self.ran(text).returncode == 0, None
        done = self.watched(text)
        later = done.returncode != 0 and checked_value.got_past(done.output, reached)
        return done.returncode == 0 or later, later

    def watched(self, program: str) -> RunResult:
        """A run of `program` that prints the kinds of value its failing check read (`checked_value`)."""
        return self.ran(nonfinite.first_of(program, WATCH))

    def run_text(self, program: str, watched: bool = False) -> str:
        """The text `ran` (`watched`) runs for `program`."""
        program = nonfinite.first_of(program, WATCH) if watched else program
        return nonfinite.first_of(program, contracts.LINE) if self.contracts else program

    def checked(self, program: str, infs: bool, again: bool | None = None) -> str:
        """What `program` prints under JAX's NaN checks (and its Inf checks too, with `infs`); with
        `again` (the original's origin being established), where they meet nothing or only where the
        value is passed on, once more op by op (a compiled call's result can escape them: a Flax NNX
        test's `nnx.jit` loss made NaN by an overflow ran through them unchecked; Equinox's `error_if`
        stops the call before they see its result), unless that run, slower by nature, runs past its
        timeout. A candidate's runs are so where only that met the original's value (`eager_checks`),
        or where that is not known."""
        again = self.eager_checks is not False if again is None else again
        output = self.ran(nonfinite.with_checks(program, infs=infs)).output
        found = nonfinite.read(output, program)
        establishing, met = again and self.origin is None, nonfinite.met(found)
        if establishing and met and self.eager_checks is None:
            self.eager_checks = False
        if again and not met:
            with contextlib.suppress(CutShort):
                eager = self.ran(nonfinite.with_checks(program, infs=infs, eager=True)).output
                met = nonfinite.read(eager, program) is not None
                output = eager if met or found is None else output
                if establishing and met:
                    self.eager_checks = True
        return output

    def kind_of(self, program: str, output: str | None = None,
                made_by: str = "") -> tuple[str, int | None, tuple | None]:
        """The kind of the value the failing check read (`checked_value`), how many of its elements
        are not finite, and where the program stopped (`checked_value.stopped_at`); where the check
        reads none the program's own process can see, whether JAX's NaN checks meet a NaN
        (`output`), and no count. With `made_by`, of the values that operation made forward alone:
        its derivative taken away (`log(0)`'s `-inf`, not its derivative's `+inf`)."""
        shown = fixed(program, made_by, safe_ops.VALUE_ONLY) if made_by else program
        watched = self.watched(shown).output
        seen, reached = checked_value.kind_in(watched), checked_value.stopped_at(watched)
        self._stop = (shown, reached)
        if seen:
            return seen, checked_value.count_in(watched), reached
        return _nan_or_inf(output if output is not None else self.checked(program, False), program), None, reached

    def locate(self, program: str, run: RunResult | None, signature: Signature | None) -> Fault | None:
        if self.origin is None and not self.unfixed:
            fault = self._establish(program)
            self.contracts = "contract" in self.guards and not self.breaks
            self._held_to_call(dict(fault.fields) if fault else {})
            if self.call:
                self.log(f"the value is made inside `{self.call}` and no fix of the program's takes it away: "
                         f"JAX's checks must place each candidate's there too")
            return fault
        try:
            fault = self._as_checks_name_it(program) if self.unfixed else hold.held(self, program)
        except _Invalid as broken:
            return refused(INVALID, f"A call was given an input its documentation rules out: {broken}")
        return call_fix.held(self, program, fault)

    def stopped(self, program: str) -> tuple | None:
        """Where `program` stops (`checked_value.stopped_at`): from `kind_of`'s run of it, where it made one."""
        return self._stop[1] if self._stop[0] == program else checked_value.stopped_at(self.watched(program).output)

    def _held_to_call(self, at: dict) -> None:
        """Hold candidates to the public call the value is made inside (`oracles.nonfinite.inside_call`):
        JAX's checks must place a candidate's value in that call too, as they place it in this run (a
        name alone, `from jax.scipy.special import bessel_jn` beside a recurrence of its own, is not),
        and it must run through with the call computed right, where that took the original's away."""
        self.called = at["from"] if nonfinite_kinds.inside_call(at) else ""
        self.call = self.called if "call" in self.guards else ""

    def _establish(self, program: str) -> Fault | None:
        """The origin of the original's failing value; its first runs side by side (nothing else runs
        yet), the fixes of each operation JAX's checks name in turn. On the way, whether the original
        breaks a public call's contract (`breaks`)."""
        with ThreadPoolExecutor(max_workers=4) as pool:
            checked = {infs: pool.submit(self.checked, program, infs, True) for infs in (False, True)}
            watched = pool.submit(self.watched, program)
            contracted = pool.submit(self.run, nonfinite.first_of(program, contracts.LINE))
            outputs = {infs: done.result() for infs, done in checked.items()}
            watched = watched.result().output
            seen = checked_value.kind_in(watched)
            kind = seen or _nan_or_inf(outputs[False], program)
            count = checked_value.count_in(watched) if seen else None
            reached = checked_value.stopped_at(watched)
            self.breaks = self._breaks_one(contracted.result())
        nans, both = (nonfinite.read(outputs[infs], program) for infs in (False, True))
        guessed = nonfinite.located(outputs.__getitem__, program)
        mode = nans["in"] if nans and nans["in"] != "forward" else derivative_mode(program)
        named = suspects.candidates(guessed, both, nans)
        vias = suspects.vias(named, guessed, program)
        call = lambda op: call_fix.call_of(guessed, op)  # noqa: E731
        for op, via in vias.items():
            with ThreadPoolExecutor(max_workers=2) as pool:
                share = pool.submit(self.forward_share_of, program, op, kind, count, reached)
                if not self.passes(program, op, safe_ops.DERIVATIVE, reached):
                    continue
                right = call_fix.the_calls(self, program, call(op), op, safe_ops.DERIVATIVE, kind, reached)
                if right:
                    return self._as_unfixed(program, outputs, call_fix.evidence(call(op), safe_ops.DERIVATIVE, right),
                                            right)
                share = share.result()
                where = made_in(share, mode)
                forward = pool.submit(self._forward_kind, program, op) if where == "forward" else None
                point = self._point(program, op, reached)  # beside the forward kind: the next round needs both
                kind = (forward.result() if forward else None) or kind
                cause = self._cause(program, kind, where, op, point, reached)
                formula = self._formula(program, reached, saturating=not causes.named(cause)) \
                    if self._formula_may_fix(cause, point) else ""
                self.origin = Origin(kind, where, op, via, cause, point, self.breaks, fix=formula or FIX)
                found = {"op": op, "from": via, "in": where, "kind": kind,
                         "prim": (nans or both or {}).get("prim", "")}
                said = stable_fix.evidence(formula, kind, underflow=True) if formula else \
                    forward_share.evidence(found, share)
                return Fault(op, self.origin.fields(), said)
        overflowing = suspects.candidates(guessed, both, nans, overflows=True)
        def made(op: str) -> str:
            return made_in(self.forward_share_of(program, op, kind, count, reached), mode)

        op = float64_fix.origin_op(self, program, overflowing, kind, reached)
        right = call_fix.the_calls(self, program, call(op), op, WIDE, kind, reached) if op else ""
        if right:
            return self._as_unfixed(program, outputs, call_fix.evidence(call(op), WIDE, right), right)
        widened = self._widened(program, op, kind, reached, vias, made)
        return widened or self._rounded(program, guessed, kind, reached) or self._as_unfixed(program, outputs,
                                                                                               reached=reached)

    def _widened(self, program: str, op: str, kind: str, reached: tuple | None, vias: dict, made):
        """The origin of a value float32 cannot hold (`float64_fix`: `op`, found so), or float64 neither,
        that a formula written by hand makes (`stable_fix`); None when it is neither. `made(op)`: the
        transformation the checked value was made in, by how much of it `op`'s forward fix takes away
        (not where JAX's checks first meet one: a training step's Inf that never reaches the check)."""
        formula = "" if op else self._formula(program, reached)
        if not op and not formula:
            return None
        where = made(op) if op else float64_fix.made_in(self, program)
        op = op or stable_fix.op_of(formula)
        kind = (self._forward_kind(program, op) if where == "forward" else None) or kind
        self.origin = Origin(kind, where, op, vias.get(op, op), breaks_contract=self.breaks, fix=formula or WIDE)
        said = stable_fix.evidence(formula, kind) if formula else float64_fix.evidence(op, kind)
        return Fault(op, self.origin.fields(), said)

    def _rounded(self, program: str, at: dict | None, kind: str, reached: tuple | None) -> Fault | None:
        """The origin of a NaN that float32's rounding put outside the domain of the operation JAX's
        checks name (`at`), made forward (`rounding_fix`); None when it is not one."""
        cause = rounding_fix.found(self, program, at, kind, reached) if at else ""
        if not cause:
            return None
        kind = self._forward_kind(program, at["op"]) or kind
        self.origin = Origin(kind, "forward", at["op"], at["from"], cause, breaks_contract=self.breaks, fix=ROUNDED)
        return Fault(at["op"], self.origin.fields(), rounding_fix.evidence(at["op"], cause))

    @staticmethod
    def _formula_may_fix(cause: str, point: str) -> bool:
        """Whether a formula's stable form may be what keeps the value finite: every term of a sum of
        `exp`s underflowed, or a pole met where no float is wide enough to keep off it (a sigmoid that
        is exactly 1 under `log`)."""
        return cause == f"{stable_fix.OP}-{causes.UNDERFLOW}" or point == causes.POLE and not causes.named(cause)

    def _formula(self, program: str, reached: tuple | None, saturating: bool | None = None) -> str:
        """The first formula `program` writes by hand whose stable form makes it run through, or "";
        a sigmoid's `log` too where no one expression writes it (`saturated`). With `saturating`, only
        the formulas of a function that no float keeps off 0 or 1 (or, False, only the others): an
        underflow's `log(0)` is held to its cause, the `exp` that underflowed, not to a `log_softmax`."""
        found = stable_fix.formulas(program)
        found += [saturated.FIX] if saturated.FIX not in found and saturated.may_write(program) else []
        tried = [f for f in found if saturating is None or (f in stable_fix.SATURATING) == saturating]
        return next((f for f in tried if self.passes(program, "", f, reached)), "")

    def _as_unfixed(self, program: str, outputs: dict, why: str = "", right: str = "",
                    reached: tuple | None = None) -> Fault | None:
        """Held where JAX's checks place the value, and, where that is inside a public call, to running
        through with the call computed right (`right`, or the first way of `call_fix` that does, or gets
        the check past where it failed, `reached`: then each candidate must get past its own)."""
        self.unfixed = True
        self.log(why or "no fix of a single operation, nor float64, nor a stable formula makes the program run "
                 "through: the non-finite value is held where JAX's checks first meet it, and to its kind")
        found = nonfinite.located(outputs.__getitem__, program) or {}
        if not right and nonfinite_kinds.inside_call({**found, "fix": nonfinite_kinds.NO_CAUSE}):
            call = found["from"]
            right = call_fix.right_way(self, program, call, forward=found.get("in") == "forward", reached=reached)
            through = "gets past its check where it failed" if self.later else "runs through"
            self.log(f"with `{call}` computed {call_fix.WORDS[right]}, the program {through}: each candidate must "
                     f"too" if right else f"no way of computing `{call}` right makes the program run through")
        self.right = right
        return self._as_checks_name_it(program, outputs, found or None)

    def _point(self, program: str, op: str, reached: tuple | None) -> str:
        """The one class of point (`safe_ops.POINTS`) whose fix alone makes the program run through (or
        get past its check), "" when none or more than one does (points of several classes)."""
        later = self.later
        with ThreadPoolExecutor(max_workers=len(safe_ops.POINTS)) as pool:
            runs = {point: pool.submit(self.passes, program, op, f"{safe_ops.DERIVATIVE}@{point}", reached)
                    for point in safe_ops.POINTS}
            passing = [point for point, done in runs.items() if done.result()]
        self.later = later
        return passing[0] if len(passing) == 1 else ""

    def _forward_kind(self, program: str, op: str) -> str | None:
        """The kind of the checked values `op` made forward, its derivative taken away; None when the
        check then reads no non-finite value."""
        return checked_value.kind_in(self.watched(fixed(program, op, safe_ops.VALUE_ONLY)).output)

    def _breaks_one(self, run: RunResult) -> bool:
        """Whether the original itself gives a call an input its documentation rules out: then its
        candidates may too."""
        broken = contracts.broken(run.output)
        if broken:
            self.log(f"the program gives a call an input its documentation rules out ({broken}): candidates may too")
        return bool(broken)

    def _as_checks_name_it(self, program: str, outputs: dict | None = None, found: dict | None = None) -> Fault | None:
        """The value's kind, and where JAX's checks place it (`nonfinite.located`, as `found` says where
        it is read from `outputs` already)."""
        outputs = outputs or {infs: self.checked(program, infs) for infs in (False, True)}
        found = found or nonfinite.located(outputs.__getitem__, program)
        if found is None:
            return None
        fields = (("value", self.kind_of(program, outputs[False])[0]), ("in", found["in"]), ("op", found["op"]),
                  ("fix", self.right or "none"), ("from", found["from"]), *contracts.field(self.breaks))
        inside = nonfinite_kinds.inside_call(dict(fields))
        return Fault(found["op"], fields, nonfinite_kinds.inside_call_words(dict(fields)) if inside else
                     nonfinite.evidence(found))

    def _cause(self, program: str, kind: str, where: str, op: str, point: str, reached: tuple | None) -> str:
        """What made the 0 that `op` made the value from (`reducer.faults.cause`: `exp-underflow` in a
        softmax whose `log` is `-inf`), or "": the first fix that makes the program run through or get
        past its check (all of a kind at once first: one run rules that kind out)."""
        runs = rounding_fix.Runs.of_script(self, program, reached)
        found = causes.of(kind, where, op, point, runs.passes, runs.together, runs.among)
        return found if causes.named(found) else ""

    def forward_share_of(self, program: str, op: str, kind: str, count: int | None, reached: tuple | None) -> str:
        """How much of the checked value making `op`'s forward value finite takes away: ALL when the
        program runs through, its check then fails on a value of another kind or on finite values
        alone where it read non-finite ones (a wrong value; not a raise that reads none), or passes where it
        failed (`reached`) and fails later (a training loop's NaN parameters one step after the
        loss's NaN is gone: made by the derivative the forward fix leaves); SOME when the check
        reads fewer non-finite elements than the `count` it read before (a forward NaN beside the
        gradient's); else NONE."""
        done = self.watched(fixed(program, op, safe_ops.FORWARD))
        stop, seen = checked_value.stopped_at(done.output), checked_value.kind_in(done.output)
        finite = count is not None and not seen and stop is not None and reached is not None and stop[0] == reached[0]
        after = "" if done.returncode == 0 or finite or checked_value.got_past(done.output, reached) else seen
        return taken_away(after, checked_value.count_in(done.output), kind, count)


class _Invalid(Exception):
    """A run of a candidate broke a public call's contract (`contracts`)."""


def _nan_or_inf(nan_checked: str, program: str) -> str:
    """The kind by whether JAX's NaN checks met a NaN (`nan_checked`: the output of that run)."""
    found = nonfinite.read(nan_checked, program)
    return NAN if found and found["kind"] == NAN else INF

