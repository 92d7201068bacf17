"""The traced-program level: capture the failing transformation's jaxpr, shrink it, write it back.

1. Capture: one sandboxed run of the script under `reducer.levels.jaxpr.capture`, which records every
   failing call through a JAX transformation as a spec (innermost first).
2. Keep the first spec whose own run, in a warm worker (`reducer.levels.jaxpr.worker`), shows the same
   failure signature as the script (same oracle, same judge).
3. Reduce it with the generic engine and the jaxpr passes; candidates run in warm workers, one per
   job, with no Python source written per candidate.
4. Write it back as a standalone script (`reducer.levels.jaxpr.emit`, public jax.numpy / jax.lax calls)
   and verify that script in a fresh interpreter through the normal sandbox and oracle; when the
   public spelling loses the failure, bind the primitives directly instead.
"""
from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from oracles.base import Oracle, Signature
from reducer.levels.jaxpr import crash_site
from reducer.levels.jaxpr import emit as jaxpr_emit
from reducer.levels.jaxpr import numeric
from reducer.levels.jaxpr.fit import out_of_reach
from reducer.levels.jaxpr import program as jp
from reducer.engine import Engine, Problem
from reducer.levels.jaxpr.worker import run_spec
from reducer.levels.jaxpr.passes import jaxpr_passes
from reducer.workers.requests import CapturedScript
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
        spec = jp.loads(self.spec)
        ops = dict.fromkeys(e["p"] for _, j in jp.jaxprs(spec["jaxpr"]) for e in j["eqns"]
                            if e["p"] not in ("jit", "enzyme", "__fill__", "__const__"))
        if not ops:
            return ""
        under = f" under `{' ∘ '.join(self.transforms)}`" if self.transforms else ""
        return (f"At the traced level the failure needs only {', '.join(f'`{p}`' for p in ops)}{under} "
                f"({self.equations_before} → {self.equations_after} equations).")


def capture(sandbox: Sandbox, source: str, limits: Limits, ahead: bool = False) -> dict:
    """Run the script once under the capturing harness; returns {"specs", "notes", "error", "ahead"}.
    With `ahead`, every transformed call is recorded before it runs (`reducer.levels.jaxpr.ahead`),
    so a run that dies or hangs still leaves its calls."""
    run = sandbox.run(CapturedScript(sandbox.script_name, source, ahead), limits, isolated=True)
    if run.timed_out and not run.harness.get("ahead"):
        return {"specs": [], "notes": ["the capturing run timed out"], "error": ""}
    if "specs" not in run.harness:
        tail = run.stderr.strip().splitlines()[-1:] or [""]
        return {"specs": [], "notes": [f"the capturing run wrote nothing ({tail[0][:200]})"], "error": ""}
    return run.harness


#: captured programs run to find the one that shows the failure (a process that dies at exit, after
#: its last transformed call, leaves many calls that all run fine)
MAX_TRIED = 6


class Judge:
    """Whether a traced candidate shows the wanted failure: through the oracle, or for a numeric
    failure through the replay's own check (`reducer.levels.jaxpr.numeric`)."""

    def __init__(self, oracle: Oracle, wanted: Signature, sites: crash_site.Sites | None = None):
        self.oracle, self.wanted, self.sites = oracle, wanted, sites
        self.check = numeric.check_of(wanted)
        self.ahead = bool(self.check) or (wanted.family == "crash" and wanted.get("how") in ("signal", "hang"))

    def candidates(self, found: dict) -> list[str]:
        """The captured specs worth trying, in order."""
        if not self.ahead:
            return found["specs"]
        specs = found.get("ahead", []) + [s for s in found["specs"] if s not in found.get("ahead", [])]
        if self.check:
            specs = [s for s in specs if numeric.fits(jp.loads(s), self.check)]
        return specs

    def request(self, spec: str, explain: bool = False) -> str:
        return numeric.with_check(spec, self.check, explain) if self.check else spec

    def __call__(self, run, spec: str | None = None) -> tuple[bool, Signature | None]:
        """The verdict on `run` of the candidate `spec` (whose crash is located when the wanted
        failure names its operation)."""
        if self.check:
            return numeric.same(self.oracle, self.wanted, run)
        if self.sites is not None and spec is not None:
            run = self.sites.attach("", run, spec)
        return self.oracle.judge(self.wanted, run)


def first_reproducing(found: dict, judge: Judge, sandbox: Sandbox, limits: Limits, log):
    """The first captured spec whose own run shows the failure, and that run; (None, None) when none."""
    for candidate in judge.candidates(found)[:MAX_TRIED]:
        run = run_spec(sandbox, judge.request(candidate, explain=True), limits, max(limits.timeout, 30.0))
        ok, seen = judge(run, candidate)
        if ok:
            return candidate, run
        log(f"jaxpr level: a captured program shows {seen or 'no failure'}, not the failure; skipped")
    return None, None


def reduce_traced(source: str, sandbox: Sandbox, limits: Limits, oracle: Oracle, wanted: Signature, log,
                  budget: float = 300.0, jobs: int = 1,
                  stop: threading.Event | None = None, verify_runs: int = 2, on_event=None) -> TracedResult | None:
    """Capture, reduce and write back the failing traced program of `source`; None (and a log line
    saying why) when no captured program shows the failure or the written-back script does not.
    `on_event` sees the engine's progress events."""
    start = time.monotonic()
    stop = stop or threading.Event()
    judge = Judge(oracle, wanted, _sites(sandbox, limits, oracle, wanted))
    found = capture(sandbox, source, limits, ahead=judge.ahead)
    for note in found.get("notes", [])[:3]:
        log(f"jaxpr level: not captured: {note}")
    if not judge.candidates(found):
        log("jaxpr level: no failing transformation was captured")
        return None
    spec, first = first_reproducing(found, judge, sandbox, limits, log)
    if spec is None:
        log("jaxpr level: no captured program reproduces the failure on its own")
        return None
    rep = jp.JaxprSpec()
    # a hang is the failure itself: candidates run as long as the program did before it was stopped
    timeout = limits.timeout if wanted.get("how") == "hang" else max(3.0, 3 * (first.seconds or 1.0))

    def test(candidate: str, cancel: threading.Event) -> bool:  # the engine caches outcomes
        if stop.is_set() or cancel.is_set():
            return False
        run = run_spec(sandbox, judge.request(candidate), limits, timeout, cancel)
        return not run.cancelled and judge(run, candidate)[0]

    before = jp.count_eqns(jp.loads(spec)["jaxpr"])
    log(f"jaxpr level: captured {' ∘ '.join(t['t'] for t in jp.loads(spec)['transforms']) or 'a call'} of "
        f"{before} equations (first run {first.seconds:.2f} s; candidate timeout {timeout:.0f} s"
        f"{'; judged by the ' + judge.check + ' check' if judge.check else ''})")
    fault = numeric.fault_line(first)
    if fault:
        log(f"jaxpr level: {fault}")
    problem = Problem(rep, test, on_event=on_event or (lambda e: None), level="jaxpr")
    best = Engine(problem, jaxpr_passes(), jobs=jobs, stop=stop, deadline=start + budget).reduce(spec)
    stats = problem.stats
    after = jp.count_eqns(jp.loads(best)["jaxpr"])
    log(f"jaxpr level: {before} -> {after} equations; {stats.tested} tested, {stats.accepted} accepted")
    for name, counts in stats.per_pass.items():
        log(f"  jaxpr pass {name}: {counts['tested']} tested, {counts['accepted']} accepted")
    if stop.is_set():
        log("jaxpr level: interrupted before the write-back")
        return None
    result = write_back(best, sandbox, limits, oracle, wanted, verify_runs, log)
    if result is None:
        return None
    script, arrays, verified = result
    return TracedResult(script=script, arrays=arrays, spec=best, equations_before=before, equations_after=after,
                        tested=stats.tested, accepted=stats.accepted, seconds=time.monotonic() - start,
                        verified=verified, transforms=[t["t"] for t in jp.loads(best)["transforms"]])


FORMS = ((False, "public calls", "public jax.numpy / jax.lax calls"),
         (True, "bound primitives", "primitives bound directly"))


def write_back(spec: str, sandbox: Sandbox, limits: Limits, oracle: Oracle, wanted: Signature, runs: int,
               log) -> tuple[str, dict, str] | None:
    """The script for `spec` that reproduces the failure in fresh interpreters, its arrays and verdict.
    Each form that does not is logged with what its run showed instead and where it stopped; when
    none does, the log says "write-back failed" (a bug of the emitter, not an outcome)."""
    users = numeric.as_users_write(jp.loads(spec))
    for bind_all, short, long in FORMS:
        text, arrays = jaxpr_emit.emit(users, bind_all=bind_all)
        if numeric.check_of(wanted):  # the script computes both values and stops as the program did
            text = numeric.finish_script(text, users, wanted)
        try:
            compile(text, "repro.py", "exec")
        except SyntaxError as exc:
            log(f"jaxpr level: the written-back script ({short}) is not valid Python, line {exc.lineno}: "
                f"{(exc.text or '').strip()[:160]}")
            continue
        good, why = _verify(text, arrays, bind_all, sandbox, limits, oracle, wanted, runs)
        if good == runs:
            return text, arrays, f"yes ({good}/{runs} runs of the written-back script, {long})"
        log(f"jaxpr level: the written-back script ({short}) showed the failure in {good}/{runs} runs; {why}")
    log("jaxpr level: write-back failed: no written-back form reproduces the reduced traced program")
    return None


def _verify(text: str, arrays: dict, bind_all: bool, sandbox: Sandbox, limits: Limits, oracle: Oracle,
            wanted: Signature, runs: int) -> tuple[int, str]:
    """How many of `runs` fresh runs of the script show the failure (stopping at the first that does
    not), and what that one showed instead."""
    import numpy as np

    extra = ()
    if arrays:
        holder = Path(sandbox.root) / f"jaxpr-inputs-{int(bind_all)}"
        holder.mkdir(parents=True, exist_ok=True)
        np.savez(holder / jaxpr_emit.NPZ, **arrays)
        extra = (holder / jaxpr_emit.NPZ,)
    checker = Sandbox(Path(sandbox.root) / "jaxpr-verify", script_name=sandbox.script_name,
                      data_files=tuple(sandbox.data_files) + extra, platform=sandbox.platform,
                      check_gradients=sandbox.check_gradients, extra_env=dict(sandbox.extra_env))
    good = 0
    sites = _sites(checker, limits, oracle, wanted)
    try:
        for _ in range(runs):
            run = checker.run(text, limits, fresh=True)
            ok, seen = oracle.judge(wanted, sites.attach(text, run) if sites else run)
            if not ok:
                stopped = where_it_stopped(run.stderr, text, sandbox.script_name)
                return good, f"it showed {seen or 'no failure'}{stopped}"
            good += 1
    finally:
        checker.close()
    return good, ""


def _sites(sandbox: Sandbox, limits: Limits, oracle: Oracle, wanted: Signature) -> crash_site.Sites | None:
    """What names the operation a candidate's crash happens in, when the wanted failure names one."""
    if not wanted.get("op") or not crash_site.located(wanted):
        return None
    return crash_site.Sites(sandbox, limits, oracle, wanted)


def where_it_stopped(stderr: str, text: str, script: str = "repro.py") -> str:
    """`: <exception line>, at line N: <source>` for the last exception the written-back script
    `text` (run as `script`) raised, at its last frame in the script."""
    import re

    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    error = next((ln for ln in reversed(lines) if re.match(r"^[A-Za-z_.]+(Error|Exception)\b", ln)), "")
    frames = [int(n) for n in re.findall(rf'File "[^"]*{re.escape(script)}", line (\d+)', stderr)]
    source = text.splitlines()
    at = ""
    if frames and 0 < frames[-1] <= len(source):
        at = f", at line {frames[-1]}: {source[frames[-1] - 1].strip()[:160]}"
    return (f": {error[:200]}" if error else "") + at


# -- choosing the level, inside a script reduction ------------------------------------------------
LEVELS = ("source", "jaxpr")
#: `auto` runs the jaxpr level on programs built from classes (modules, configs: the structure the
#: source level stalls on) or longer than this, unless `reducer.levels.jaxpr.fit` knows before capturing
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


def traced_level(job, original: str, est) -> str:
    """Run the traced-program level for a `reducer.reduce.Reduction` when its levels say so (by
    default: a program with classes or over AUTO_MIN_TOKENS tokens, or a wrong value; and an oracle
    that judges output), and return the program the source level starts from: the written-back
    script when it reproduces and is smaller. Sets `job.levels_run`, the levels the report names."""
    chosen = parse_levels(getattr(job.options, "levels", "auto"))
    job.levels_run = []
    size = job.rep.size(original)
    if chosen is None:
        # a wrong value is compared on both sides: the source level cannot shrink one side alone
        want = size > AUTO_MIN_TOKENS or _has_classes(original) or bool(numeric.check_of(est.signature))
        why_not = f"a flat script of {size} tokens, at most {AUTO_MIN_TOKENS}" if not want else ""
    else:
        want, why_not = "jaxpr" in chosen, "not asked for"
    # an activity mismatch JAX raises (custom_vjp structure …) shows in a traced program's own output
    if want and est.oracle.runs_candidates:
        want, why_not = False, f"the {est.oracle.name} oracle needs the script itself"
    if want and out_of_reach(original, est.signature):
        want, why_not = False, out_of_reach(original, est.signature)
    if want and job.resume:
        want, why_not = False, "resuming a source-level reduction"
    if want:
        budget = min(600.0, 0.5 * job.options.max_time) if job.options.max_time else 600.0
        result = reduce_traced(original, job.sandbox, job.limits, est.oracle, est.signature, job.log,
                               budget=budget, jobs=job.options.jobs, stop=job.stop,
                               on_event=job.on_event)
        if result is not None:
            job.traced_counts = (result.tested, result.accepted)
            job.traced_story = result.story()
            smaller = job.rep.size(result.script) <= WRITTEN_BACK_AT_MOST * size
            if smaller or chosen is not None:
                if result.arrays:
                    import numpy as np

                    holder = job.scratch / "jaxpr"
                    holder.mkdir(parents=True, exist_ok=True)
                    np.savez(holder / jaxpr_emit.NPZ, **result.arrays)
                    job.sandbox.data_files = tuple(job.sandbox.data_files) + (holder / jaxpr_emit.NPZ,)
                    job.out.mkdir(parents=True, exist_ok=True)
                    shutil.copy(holder / jaxpr_emit.NPZ, job.out / jaxpr_emit.NPZ)
                job.levels_run.append("jaxpr")
                original = job.rep.normalize(result.script)
                job.log(f"jaxpr level: written back as a script of {job.rep.size(original)} tokens "
                        f"(from {size}); verified: {result.verified}")
                if job.options.stall is None or job.options.stall > SOURCE_STALL_AFTER_TRACED:
                    job.options.stall = SOURCE_STALL_AFTER_TRACED
                    job.log(f"source level: from the written-back script, stopping after "
                            f"{SOURCE_STALL_AFTER_TRACED:g} s without a smaller candidate")
            else:
                job.log(f"jaxpr level: the written-back script ({job.rep.size(result.script)} tokens) is not "
                        f"smaller than {WRITTEN_BACK_AT_MOST:.0%} of the program ({size}); kept the program")
    elif chosen is not None or size > AUTO_MIN_TOKENS or _has_classes(original):
        job.log(f"jaxpr level: not run ({why_not})")
    if chosen is None or "source" in chosen or not job.levels_run:
        job.levels_run.append("source")
    return original
