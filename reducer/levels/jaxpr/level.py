"""The traced-program level: capture the failing transformation's jaxpr, shrink it, write it back.

1. Capture: one sandboxed run of the script under `reducer.levels.jaxpr.capture`, which records every
   failing call through a JAX transformation as a spec (innermost first).
2. Keep the first spec whose own run, in a warm worker (`reducer.levels.jaxpr.worker`), shows the same
   failure signature as the script (same oracle, same judge): `reducer.levels.jaxpr.failing_call`; none
   where no script written back from it could (a value made inside a call it holds inlined).
3. Reduce it with the generic engine and the jaxpr passes; candidates run in warm workers, one per
   job, with no Python source written per candidate.
4. Write it back as a standalone script (`reducer.levels.jaxpr.as_script`, public jax.numpy / jax.lax calls)
   and verify that script in a fresh interpreter through the normal sandbox and oracle; when the
   public spelling loses the failure, bind the primitives directly instead (`write_back`).

`JaxprLevel` is this level in a script's chain (`reducer.levels.base.Level`): it gets the job's
judge, keep-aside, stop event, stall, pass order and jobs in a `LevelContext`, the failure's
oracle, signature, votes and limits in `EstablishedFailure`, and returns a `LevelResult`; candidates get
an adaptive timeout. `reduce_traced` runs the same steps for a caller without a job.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from oracles import kinds
from oracles.base import Oracle, Signature
from reducer.engine import Engine, Problem
from reducer.established import EstablishedFailure
from reducer.levels.base import LevelContext, LevelResult
from reducer.levels import fault_finders
from reducer.levels.jaxpr import as_script
from reducer.levels.jaxpr import replay_order, value_checks
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.failing_call import captured
from reducer.levels.jaxpr.traceable import out_of_reach
from reducer.levels.jaxpr.resumed_program import resumed_spec
from reducer.levels.jaxpr.passes import jaxpr_passes
from reducer.levels.time_share import TimeShare
from reducer.levels.jaxpr.worker import run_spec
from reducer.levels.jaxpr.write_back import plain_judge, write_back
from reducer.timeouts import FRESH_START, AdaptiveTimeout, least_for_checks
from reducer.workers.sandbox import Limits, Sandbox


@dataclass
class TracedResult:
    """What the level produced: the written-back script (and its arrays), and how it went."""

    script: str
    arrays: dict
    spec: str
    equations_before: int
    equations_after: int
    tested: int
    accepted: int
    seconds: float
    verified: str
    transforms: list = field(default_factory=list)

    def story(self) -> str:
        """What the reduced traced program still needs to fail, for the report: its operations (not the
        calls, constants and fills around them) under its transformations."""
        spec = jp.parse(self.spec)
        ops = dict.fromkeys(e.primitive for _, j in spec.jaxpr.walk() for e in j.eqns
                            if e.primitive not in ("jit", "enzyme", "__fill__", "__const__"))
        if not ops:
            return ""
        under = f" under `{' ∘ '.join(self.transforms)}`" if self.transforms else ""
        return (f"At the traced level the failure needs only {', '.join(f'`{p}`' for p in ops)}{under} "
                f"({self.equations_before} → {self.equations_after} equations).")


#: the rounds of fresh runs after the traced level stops shrinking, besides the final checks': its
#: write-back's check of the written-back script, and the source level's first run of it
AFTER_RUNS = 2
CHECK_ROUNDS = 2  # the final checks' rounds of fresh runs (three runs, two at a time)
#: the traced level stops after this share of its budget (at least STALL_FLOOR seconds) without progress
STALL_SHARE, STALL_FLOOR = 0.2, 10.0
STALL_RUNS = 6  # … and at least this many candidate runs
MAX_BUDGET = 600.0  # seconds the traced level shrinks at most


class Judge:
    """Whether a traced candidate shows the wanted failure: through the oracle, or for a numeric
    failure through the replay's own check (`reducer.levels.jaxpr.value_checks`)."""

    def __init__(self, oracle: Oracle, wanted: Signature, finder: fault_finders.FaultFinder | None = None,
                 verdict=None):
        self.oracle, self.wanted, self.finder = oracle, wanted, finder
        self.verdict = verdict or plain_judge  # the job's `Job.judge`: an oracle's exception is a tool bug
        self.check = value_checks.check_of(wanted)
        self.records_ahead = bool(self.check) or (kinds.crash(wanted) and wanted.get("how") in ("signal", "hang"))

    def candidates(self, found: dict) -> list[str]:
        """The captured specs worth trying, in order."""
        if not self.records_ahead:
            return found["specs"]
        specs = found.get("ahead", []) + [s for s in found["specs"] if s not in found.get("ahead", [])]
        if self.check:
            specs = [s for s in specs if value_checks.matches_check(jp.parse(s), self.check)]
        if self.check == "nonfinite":
            specs = replay_order.worth_replaying(specs, self.wanted)
        return specs

    def request(self, spec: str, explain: bool = False) -> str:
        return value_checks.with_check(spec, self.check, explain, self.wanted) if self.check else spec

    def __call__(self, run, spec: str | None = None) -> tuple[bool, Signature | None]:
        """The verdict on `run` of the candidate `spec` (whose crash is located when the wanted
        failure names its operation)."""
        if self.check:
            return self.verdict(Replayed(self.oracle), self.wanted, run)
        if self.finder is not None and spec is not None:
            run = self.finder.attach("", run, spec)
        return self.verdict(self.oracle, self.wanted, run)


class Replayed:
    """The oracle as a replay's own numeric check judges it (`value_checks.same`), under its name."""

    def __init__(self, oracle: Oracle):
        self.oracle, self.name = oracle, oracle.name

    def judge(self, wanted: Signature, run) -> tuple[bool, Signature | None]:
        return value_checks.same(self.oracle, wanted, run)


def reduce_traced(source: str, sandbox: Sandbox, limits: Limits, oracle: Oracle, wanted: Signature, log,
                  budget: float = 300.0, jobs: int = 1,
                  stop: threading.Event | None = None, verify_runs: int = 2, on_event=None) -> TracedResult | None:
    """`traced` for a caller without a job: a context of its own (the oracle judges directly, no
    keep-aside, no stall). `on_event` sees the engine's progress events."""
    context = LevelContext(judge=plain_judge, keep_aside=lambda *_: None, stop=stop or threading.Event(),
                           started=time.monotonic(), deadline=None, stall=None, reorder=False, jobs=jobs, log=log,
                           on_event=on_event or (lambda e: None), sandbox=sandbox, limits=limits,
                           bounded=lambda t: t, scratch=Path(sandbox.root), platform=sandbox.platform,
                           adopt=lambda job: None, out=Path(sandbox.root))
    established = EstablishedFailure(oracle, wanted, None, 1.0, 0.0, limits=limits)
    return traced(source, established, context, budget, verify_runs)


def traced(source: str, established: EstablishedFailure, ctx: LevelContext, budget: float,
           verify_runs: int = 2) -> TracedResult | None:
    """Capture, reduce and write back the failing traced program of `source`; None (and a log line
    saying why) when no captured program shows the failure or the written-back script does not."""
    start, log, sandbox, limits = time.monotonic(), ctx.log, ctx.sandbox, ctx.limits
    oracle, wanted = established.oracle, established.signature
    judge = Judge(oracle, wanted, fault_finders.in_sandbox(sandbox, limits, oracle, wanted, log), ctx.judge)
    spec, first = resumed_spec(ctx.resumed, judge, sandbox, limits, log) if ctx.resumed else (None, None)
    resumed = spec is not None
    if not resumed:
        spec, first = captured(source, judge, sandbox, limits, log)
        if spec is None:
            return None
    # a hang is the failure itself: candidates run as long as the program did before it was stopped
    hang = wanted.get("how") == "hang"
    timeout = limits.timeout if hang else max(3.0, 3 * (first.seconds or 1.0))
    parsed = jp.parse(spec)
    before = jp.count_eqns(parsed.jaxpr)
    log(f"jaxpr level: {'kept' if resumed else 'captured'} {' ∘ '.join(parsed.kinds()) or 'a call'} of "
        f"{before} equations (first run {first.seconds:.2f} s; candidate timeout {timeout:.0f} s"
        f"{'; judged by the ' + judge.check + ' check' if judge.check else ''})")
    fault = value_checks.fault_line(first)
    if fault:
        log(f"jaxpr level: {fault}")
    clock = None if hang else AdaptiveTimeout(timeout)
    keep = ctx.on_accept or (lambda best, counts: None)  # the best program so far, for --resume
    stall = progress_stall(ctx.stall, budget, value_checks.replay_seconds(first))  # not the first's explaining
    share = TimeShare(start, budget, shrinking_ends(ctx, value_checks.script_seconds(first)), window=stall / 2)
    problem = Problem(jp.JaxprSpec(), candidate_test(judge, ctx, established.votes, clock or timeout),
                      on_event=ctx.on_event, on_accept=share.watching(lambda best: keep(best, problem.stats)),
                      level="jaxpr")
    keep(spec, problem.stats)
    harness = first.harness or {}
    values = {} if resumed or harness.get("alone") else harness.get("recorded") or {}  # the call's variables
    engine = Engine(problem, jaxpr_passes(values), jobs=ctx.jobs, stop=ctx.stop, deadline=share, stall=stall,
                    reorder=ctx.reorder)
    best = engine.reduce(spec)
    if share.extended:
        log(f"jaxpr level: went on past its share of --max-time while it was still shrinking "
            f"({time.monotonic() - share.share_ends:.0f} s more)")
    stats = problem.stats
    after = jp.count_eqns(jp.parse(best).jaxpr)
    log(f"jaxpr level: {before} -> {after} equations; {stats.tested} tested, {stats.accepted} accepted")
    for name, counts in stats.per_pass.items():
        log(f"  jaxpr pass {name}: {counts['tested']} tested, {counts['accepted']} accepted")
    if engine.stalled:
        log(f"jaxpr level: stopped early: no smaller candidate in {engine.stall:g} s (its time goes to the next level)")
    if ctx.stop.is_set():
        log("jaxpr level: interrupted before the write-back")
        return None
    late = lambda need: ctx.deadline is not None and time.monotonic() + need >= ctx.deadline  # noqa: E731
    result = write_back(best, sandbox, limits, oracle, wanted, verify_runs, log, ctx.judge, late)
    if result is None:
        return None
    script, arrays, verified = result
    return TracedResult(script=script, arrays=arrays, spec=best, equations_before=before, equations_after=after,
                        tested=stats.tested, accepted=stats.accepted, seconds=time.monotonic() - start,
                        verified=verified, transforms=jp.parse(best).kinds())


def shrinking_ends(ctx: LevelContext, run_seconds: float) -> float | None:
    """When the traced level must have stopped shrinking: before its write-back, the source level's
    first run and the final checks (no less than the job keeps for them, `least_for_checks`), in
    fresh runs of the written-back script, each about as long as the call's own run (`run_seconds`).
    Not the job's `until`, sized by the original's runs, which the written-back script does not make
    again (a Flax loss's 11 s runs, loaded), nor a candidate's replay, which also locates its value."""
    if ctx.deadline is None:
        return None
    fresh = 1.5 * run_seconds + FRESH_START
    return ctx.deadline - AFTER_RUNS * fresh - max(CHECK_ROUNDS * fresh, least_for_checks(ctx.deadline - ctx.started))


def progress_stall(stall: float | None, budget: float, run_seconds: float = 0.0) -> float:
    """How long the traced level goes on without a smaller candidate: a share of its budget, so that
    a level that has stopped shrinking hands its time to the next one, but never less than
    STALL_RUNS candidate runs of `run_seconds` (on a loaded machine a few seconds are no runs at
    all); the user's --stall bounds it."""
    own = max(STALL_FLOOR, STALL_SHARE * budget, STALL_RUNS * run_seconds)
    return min(stall, own) if stall else own


def candidate_test(judge: Judge, ctx: LevelContext, votes: int, clock):
    """The engine's test of a traced candidate (the engine caches outcomes): any of `votes` runs
    shows the failure, each within `clock`'s timeout (an `AdaptiveTimeout`, or a fixed number of
    seconds); another failure met is kept aside."""
    def test(candidate: str, cancel: threading.Event) -> bool:
        for _ in range(votes):
            if ctx.stop.is_set() or cancel.is_set():
                return False
            timeout = clock.value if isinstance(clock, AdaptiveTimeout) else clock
            run = run_spec(ctx.sandbox, judge.request(candidate), ctx.limits, timeout, cancel)
            if run.cancelled:
                return False
            ok, seen = judge(run, candidate)
            if ok:
                if isinstance(clock, AdaptiveTimeout):
                    clock.record(run.seconds)
                return True
            if seen is not None and seen != judge.wanted:
                ctx.keep_aside(candidate, seen, ".jaxpr")
                return False
        return False

    return test


# -- choosing the level, inside a script reduction ------------------------------------------------
LEVELS = ("source", "jaxpr")
#: `auto` runs the jaxpr level on programs built from classes (modules, configs: the structure the
#: source level stalls on) or longer than this, unless `reducer.levels.jaxpr.traceable` knows before capturing
#: that the failure is out of its reach. On the shared benchmark's flat scripts (240-460 tokens) it
#: ended smaller and faster than the source level alone where the failure can be captured
#: (gp_cholesky_enzyme 57 against 76 tokens, newton_while_loop 40 against 46,
#: mlp_reduce_precision_enzyme 45 against 69, in a fifth to two thirds of the time) and cost nothing
#: where it cannot; below this size the source level alone is quick.
AUTO_MIN_TOKENS = 200
#: the source level continues from the written-back script only when it is at most this share of the
#: program: it spells `jax.lax` operations where the program called library functions, which the
#: source passes shrink less well (robust_median_enzyme: a written-back script of 243 tokens from 264
#: went on to 138 tokens; the program itself to 31)
WRITTEN_BACK_AT_MOST = 0.9
#: --stall of the source level when it starts from a written-back script: the traced level has
#: already reduced the program, so statement-by-statement deletions that stop paying off are cut short
SOURCE_STALL_AFTER_TRACED = 120.0


def _has_classes(source: str) -> bool:
    import ast

    try:
        return any(isinstance(n, ast.ClassDef) for n in ast.walk(ast.parse(source)))
    except (SyntaxError, ValueError):
        return False


def parse_levels(text: str) -> tuple[str, ...] | None:
    """`auto` -> None; else the named levels. Raises ValueError on an unknown name."""
    if text.strip() in ("", "auto"):
        return None
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    bad = [n for n in names if n not in LEVELS]
    if bad or not names:
        raise ValueError(f"unknown level {', '.join(bad) or repr(text)} (known: auto, {', '.join(LEVELS)})")
    return names


class JaxprLevel:
    """The traced-program level in a script's chain (`reducer.levels.base.Level`): by default on a
    program with classes or over AUTO_MIN_TOKENS tokens, or a wrong value, with an oracle that
    judges output; its result is the written-back script when it reproduces and is smaller. It
    keeps its best traced program so far through the context's `on_accept` (`best.jaxpr`), and on
    --resume starts its engine from the one kept (`resumed`) instead of capturing again."""

    name, suffix = "jaxpr", ".jaxpr"

    def __init__(self, chosen: tuple[str, ...] | None, source_rep):
        self.chosen, self.rep = chosen, source_rep  # the levels asked for; the script's rep

    def why_not(self, established: EstablishedFailure, program: str) -> str | None:
        """None when the level runs on `program`; else the log line saying why not ("": none)."""
        size = self.rep.size(program)
        if self.chosen is None:
            # a wrong value is compared on both sides: the source level cannot shrink one side alone
            want = size > AUTO_MIN_TOKENS or _has_classes(program) or bool(value_checks.check_of(established.signature))
            why = f"a flat script of {size} tokens, at most {AUTO_MIN_TOKENS}" if not want else ""
        else:
            want, why = "jaxpr" in self.chosen, "not asked for"
        # an activity mismatch JAX raises (custom_vjp structure …) shows in a traced program's own output
        if want and established.oracle.runs_candidates:
            want, why = False, f"the {established.oracle.name} oracle needs the script itself"
        if want and out_of_reach(program, established.signature, established.fix):
            want, why = False, out_of_reach(program, established.signature, established.fix)
        if want:
            return None
        worth = self.chosen is not None or size > AUTO_MIN_TOKENS or _has_classes(program)
        return f"jaxpr level: not run ({why})" if worth else ""

    def applies(self, established: EstablishedFailure, program: str) -> bool:
        return self.why_not(established, program) is None

    def reduce(self, program: str, established: EstablishedFailure, ctx: LevelContext) -> LevelResult | None:
        """Capture, shrink and write back; the result's program is the written-back script when it
        is kept (its arrays in `inputs.npz`, a file of the output and a data file of candidates)."""
        # half of --max-time while it shrinks, more while it is still shrinking (`TimeShare`): measured,
        # a traced level that is still accepting does more per second than the source level after it
        # (it stops early when it no longer is); a budget that kept the source level a floor of the
        # time left starved it (masked sqrt, loaded: 19 s of shrinking, 48 -> 21 equations and 475
        # tokens, against 75 s, 48 -> 7 and 173)
        budget = min(MAX_BUDGET, 0.5 * (ctx.deadline - ctx.started)) if ctx.deadline is not None else MAX_BUDGET
        result = traced(program, established, ctx, budget)
        if result is None:
            return None
        size, story = self.rep.size(program), result.story()
        if self.rep.size(result.script) > WRITTEN_BACK_AT_MOST * size and self.chosen is None:
            ctx.log(f"jaxpr level: the written-back script ({self.rep.size(result.script)} tokens) is not "
                    f"smaller than {WRITTEN_BACK_AT_MOST:.0%} of the program ({size}); kept the program")
            return LevelResult(program, result.tested, result.accepted, story)
        files, data = {}, ()
        if result.arrays:
            import numpy as np

            holder = ctx.scratch / "jaxpr"
            holder.mkdir(parents=True, exist_ok=True)
            np.savez(holder / as_script.NPZ, **result.arrays)
            files, data = {as_script.NPZ: (holder / as_script.NPZ).read_bytes()}, (holder / as_script.NPZ,)
        written = self.rep.normalize(result.script)
        ctx.log(f"jaxpr level: written back as a script of {self.rep.size(written)} tokens "
                f"(from {size}); verified: {result.verified}")
        return LevelResult(written, result.tested, result.accepted, story, files, ("jaxpr",), data,
                           stall=SOURCE_STALL_AFTER_TRACED)
