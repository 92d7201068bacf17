"""One reduction of a Python script (the source level, after the traced level where it applies).

`Reduction` is the script's `reducer.job.Job`: `establish` runs the original (several times, to
measure how reliably it fails) and fixes the failure signature; `shrink` runs the traced level when
it applies, then drives the engine with the source passes, writing the best program so far after
every step; `finish` writes `repro.py` and `report.md` (the job writes the rest). After a failure in
the Enzyme pipeline, the module Enzyme dumps for the result is reduced too (`follow_up`).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import oracles
from oracles.base import Oracle, Signature
from reducer import counterfactual, emit
from reducer.corpus import known_line
from reducer.engine import Engine, Event, Problem
from reducer.errors import NEEDS_INPUT, NO_BACKEND, NO_FAILURE, NO_RESUME, OTHER_FAILURE, ReducerError
from reducer.files import write_atomic
from reducer.inputs import data_files, needs_input, read_input
from reducer.job import Established, Job, Options, Verdict, last_words, no_backend
from reducer.levels.jaxpr import crash_site
from reducer.levels.source.passes import source_passes
from reducer.levels.source.passes.original_calls import original_calls
from reducer.levels.source.representation import PythonSource
from reducer.timeouts import AdaptiveTimeout
from reducer.workers.imports import preload_modules
from reducer.workers.sandbox import Limits, RunResult, Sandbox

__all__ = ["Options", "Established", "Reduction", "RUNNER_MODES"]

#: the IR follow-up's budget in seconds at most, and the least worth starting it with
IR_BUDGET, IR_MIN = 120.0, 10.0


def default_memory_mb(jobs: int) -> int:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError):
        return 8192
    return max(2048, int(total * 0.7 / max(1, jobs)))


RUNNER_MODES = {
    "trust": "candidates run one after another in one warm interpreter; the result is checked in a child of "
             "its own, and if it does not fail there the reduction goes back to the last accepted program that "
             "does and goes on confirming (default)",
    "confirm": "as trust, with every interesting verdict confirmed in a forked child of its own",
    "off": "a forked child per candidate",
}


class Reduction(Job):
    """The job for a Python script (or a test's node id made standalone)."""

    def __init__(self, script: Path, out: Path | None, options: Options, on_event=None, log=None,
                 resume: bool = False):
        path, source = read_input(Path(script))  # a .py file or a test's node id
        super().__init__(Path(out) if out else Path.cwd() / f"reduced-{path.stem}", options, on_event, log, resume)
        self.script, self.source = path, source
        self.file_name = path.name
        self.rep = PythonSource()
        self.oracle_spec = oracles.make_oracle(options.oracle, options.platform, options.hangs)
        self.needs_gradients = self.oracle_spec is None or self.oracle_spec.needs_gradient_checks
        self.sandbox = Sandbox(self.scratch / "runs", script_name=path.name,
                               data_files=data_files(path, source), platform=options.platform,
                               check_gradients=self.needs_gradients, warm=options.warm,
                               warm_modules=preload_modules(source), reuse=options.runner != "off")
        # CUDA reserves far more address space than memory: an address-space limit would stop it starting
        self.memory_mb = options.memory_mb or (None if options.platform == "gpu" else default_memory_mb(options.jobs))
        self.limits = Limits(timeout=options.timeout or 300.0, memory_mb=self.memory_mb)
        self.runaway = {"timed out": 0, "killed by a signal": 0, "out of memory": 0, "output cut": 0}
        self.votes = 1
        self.timeout: AdaptiveTimeout | None = None  # set once the first runs are timed
        self.traced_counts = (0, 0)  # candidates tested and accepted at the jaxpr level
        self.traced_story = ""  # what the reduced traced program still needs to fail (TracedResult.story)
        self.levels_run: list[str] = []  # set by the traced level (reducer.levels.jaxpr.level.traced_level)
        self.unconfirmed = 0  # runner verdicts that a child of its own did not confirm
        self.previous: dict = {}  # counts of the interrupted run being resumed
        self.problem: Problem | None = None
        self.stalled = False
        self.sites: crash_site.Sites | None = None  # names the operation a crash happens in, once one is wanted

    # -- running programs -----------------------------------------------------------------------
    def execute(self, source: str, limits: Limits, cancel: threading.Event | None = None, **how) -> RunResult:
        """One run of `source`: by the oracle itself when it runs candidates (the user's command),
        else in the sandbox (`how`: fresh, isolated); never past --max-time."""
        limits = dataclasses.replace(limits, timeout=self.bounded(limits.timeout))
        if self.oracle_spec is not None and self.oracle_spec.runs_candidates:
            return self.oracle_spec.run_candidate(source, self.file_name, limits.timeout)
        run = self.sandbox.run(source, limits, cancel, **how)
        return self.sites.attach(source, run) if self.sites is not None and not run.cancelled else run

    def fresh_run(self, program: str) -> RunResult:
        return self.execute(program, self.limits, fresh=True)

    def original_program(self) -> str:
        return self.source

    def classify(self, run: RunResult) -> tuple[Oracle, Signature] | None:
        if self.oracle_spec is None:
            return oracles.detect(run, self.options.platform, self.options.hangs)
        sig = self.oracle_spec.classify(run)
        return (self.oracle_spec, sig) if sig else None

    # -- the first runs -------------------------------------------------------------------------
    def establish(self, runs: int | None = None) -> Established:
        runs = runs or self.options.runs
        with ThreadPoolExecutor(max_workers=max(1, min(runs, self.options.jobs))) as pool:
            results = list(pool.map(lambda _: self.execute(self.source, self.limits), range(runs)))
        reason = no_backend(results[0])
        if reason:
            raise ReducerError(f"{self.script}: {reason}", NO_BACKEND)
        found = [self.classify(run) for run in results]
        hits = [h for h in found if h]
        if not hits:
            raise self.not_failing(results[0])
        oracle, sig = hits[0]
        rate = sum(1 for h in found if h and oracle.same(sig, h[1])) / len(results)
        slowest = max(r.seconds for r in results)
        if self.needs_gradients and not oracle.needs_gradient_checks:
            self.sandbox.check_gradients = False
        elif oracle.watches:  # only the watch the verdicts rest on: the others cost every failing candidate
            self.sandbox.extra_env["REDUCER_WATCHES"] = ",".join(oracle.watches)
            self.sandbox.extra_env["REDUCER_WANTED_OPERATION"] = sig.get("op") or ""  # confirmed first by locate
        if rate < 1.0:
            self.votes = max(3, runs)
        if self.options.timeout is None:
            self.limits = Limits(timeout=max(20.0, 4 * slowest), memory_mb=self.memory_mb)
        run = results[found.index(hits[0])]
        if crash_site.located(sig) and not oracle.runs_candidates:
            self.sites = crash_site.Sites(self.sandbox, self.limits, oracle)
            sig, run = self.sites.establish(self.source, run, sig)
        return Established(oracle, sig, run, rate, slowest)

    def not_failing(self, run: RunResult) -> ReducerError:
        """The error for an original that does not show the failure asked for."""
        spec = self.oracle_spec
        if spec is not None and spec.runs_candidates:
            return ReducerError(f"{self.script}: the --oracle command rejects the original script "
                                f"({last_words(run)})", OTHER_FAILURE)
        reason = needs_input(run)
        if reason:
            return ReducerError(f"{self.script}: {reason}", NEEDS_INPUT)
        if run.returncode == 0:
            return ReducerError(f"{self.script}: does not fail: nothing to reduce", NO_FAILURE)
        if spec is not None:
            seen = oracles.detect(run, self.options.platform, self.options.hangs)
            what = str(seen[1]) if seen else last_words(run)
            return ReducerError(f"{self.script}: fails, but not as --oracle {self.options.oracle} expects; "
                                f"saw: {what}", OTHER_FAILURE)
        return ReducerError(f"{self.script}: fails with no recognised failure ({last_words(run)}); "
                            f"use --oracle regex:PATTERN or script:COMMAND", OTHER_FAILURE)

    def check(self) -> Established:
        """`reducer check`: one run and its signature."""
        return self.establish(runs=1)

    def begin(self) -> tuple[Established, str]:
        est = self.establish()
        self.log(f"reducing {self.script} ({self.rep.size(self.source)} tokens), output in {self.out}")
        self.log(f"failure: {est.signature} (seen in {est.rate:.0%} of {self.options.runs} runs, "
                 f"slowest {est.seconds:.1f} s; candidate timeout {self.limits.timeout:.0f} s)")
        if self.sites is not None:
            self.log(self.sites.finding)
        known = known_line(est.signature)
        if known:
            self.log(f"{known}: the corpus has this bug already")
        return est, self.rep.normalize(self.source)

    def resume_from(self) -> tuple[Established, str]:
        """The interrupted run's oracle, signature and best program, checked to still fail."""
        state, best, wanted = self.read_state()
        if state.get("script_sha1") != hashlib.sha1(self.source.encode()).hexdigest():
            raise ReducerError(f"{self.out}: was made from another version of {self.script.name}", NO_RESUME)
        self.oracle_spec = oracle = oracles.make_oracle(state["oracle"], state.get("platform", "cpu"),
                                                        self.options.hangs)
        self.limits = Limits(timeout=self.options.timeout or state.get("timeout", 120.0), memory_mb=self.memory_mb)
        self.votes = state.get("votes", 1)
        if not oracle.needs_gradient_checks:
            self.sandbox.check_gradients = False
        if crash_site.located(wanted) and wanted.get("op"):  # runs must name the operation again
            self.sites = crash_site.Sites(self.sandbox, self.limits, oracle, wanted)
        run = self.execute(best, self.limits)
        ok, seen = self.judge(oracle, wanted, run)
        if not ok:
            raise ReducerError(f"{self.out}/best.py no longer shows {wanted} (saw {seen or last_words(run)})",
                               NO_RESUME)
        self.previous = state
        self.log(f"resuming {self.out}: {self.rep.size(best)} tokens, {state.get('tested', 0)} candidates "
                 f"tested before")
        return Established(oracle, wanted, run, state.get("rate", 1.0), 0.0), best

    def _state(self, est: Established) -> dict:
        stats, previous = self.problem.stats, self.previous
        return {"script": str(self.script.resolve()), "script_sha1": hashlib.sha1(self.source.encode()).hexdigest(),
                "oracle": self.options.oracle if self.oracle_spec is not None else est.oracle.name,
                "platform": self.options.platform, "signature": est.signature.to_dict(),
                "timeout": self.limits.timeout, "votes": self.votes, "rate": est.rate,
                "tested": previous.get("tested", 0) + stats.tested, "accepted": previous.get("accepted", 0) + stats.accepted,
                "seconds": previous.get("seconds", 0.0) + stats.seconds}

    # -- testing candidates ---------------------------------------------------------------------
    def _count_runaway(self, run: RunResult) -> None:
        kinds = [("timed out", run.timed_out), ("killed by a signal", run.signal is not None),
                 ("out of memory", "MemoryError" in run.stderr[-2000:]), ("output cut", run.truncated)]
        with self.aside_lock:
            for kind, hit in kinds:
                self.runaway[kind] += bool(hit)

    def candidate_limits(self) -> Limits:
        if self.timeout is None:
            return self.limits
        return dataclasses.replace(self.limits, timeout=self.timeout.value)

    def make_test(self, est: Established, program: str | None = None):
        """The test: fails as `est` did (and, given the starting `program`, on its own check: counterfactual)."""
        oracle, wanted = est.oracle, est.signature
        if self.options.timeout is None and not self.options.hangs and not oracle.runs_candidates:
            self.timeout = AdaptiveTimeout(self.limits.timeout)
        fix = counterfactual.check_for(self, program, wanted) if program and not oracle.runs_candidates else None

        def test(source: str, cancel: threading.Event) -> bool:
            for _ in range(self.votes):
                if self.stop.is_set() or cancel.is_set():
                    return False
                run = self.execute(source, self.candidate_limits(), cancel)
                self._count_runaway(run)
                ok, seen = self.judge(oracle, wanted, run)
                if ok and run.reused and self.options.runner == "confirm":
                    run, (ok, seen) = self._confirm(source, oracle, wanted, cancel)
                if ok and fix and not counterfactual.runs_clean(self, source, fix, cancel):
                    return False  # it stops whether or not the value is wrong
                if ok:
                    if self.timeout is not None:
                        self.timeout.record(run.seconds)
                    self.rep.note_failure(source, run.output, self.file_name)
                    return True
                if run.cancelled:
                    return False
                if seen is None and not run.timed_out and run.returncode not in (0, None):
                    other = oracles.detect(run, self.options.platform)
                    seen = other[1] if other else None
                if seen is not None and seen != wanted:
                    self.keep_aside(source, seen)
                    return False
            return False

        return test

    def _confirm(self, source: str, oracle, wanted: Signature, cancel: threading.Event):
        """An interesting verdict from the long-lived runner, checked in a child of its own: no
        earlier candidate can have left anything behind there."""
        again = self.execute(source, self.candidate_limits(), cancel, isolated=True)
        verdict = self.judge(oracle, wanted, again)
        if not verdict[0] and not again.cancelled:
            with self.aside_lock:
                self.unconfirmed += 1
            self.log(f"the runner's verdict did not hold in a child of its own (seen there: {verdict[1]})")
        return again, verdict

    def _holds(self, code: str, est: Established) -> bool:
        return self.judge(est.oracle, est.signature, self.execute(code, self.limits, isolated=True))[0]

    def _runner_misled(self, best: str, est: Established) -> bool:
        """Whether trusted runner verdicts led to a result that fails only after other candidates."""
        trusted = self.options.warm and self.sandbox.reuse and self.options.runner == "trust"
        return trusted and not est.oracle.runs_candidates and not self._holds(best, est)

    def _last_that_holds(self, accepted: list[str], est: Established) -> str:
        """The newest accepted program that fails in a child of its own (bisected; the first holds)."""
        good, bad = 0, len(accepted) - 1
        while bad - good > 1:
            mid = (good + bad) // 2
            if self._holds(accepted[mid], est):
                good = mid
            else:
                bad = mid
        return accepted[good]

    # -- shrinking ------------------------------------------------------------------------------
    def on_engine_event(self, event: Event) -> None:
        if event.kind == "accept":  # in the log file only: the progress display shows it live
            self.log_lines.append(f"[{time.strftime('%H:%M:%S')}] {event.size} tokens after "
                                  f"{event.stats.seconds:.0f} s ({event.pass_name})")
        self.on_event(event)

    def shrink(self, program: str, est: Established) -> str:
        from reducer.levels.jaxpr.level import traced_level  # the traced-program level, when chosen

        program = traced_level(self, program, est)
        if "jaxpr" in self.levels_run:  # the source level starts from a write-back: offer the user's own calls
            self.rep.original_calls = original_calls(self.source)
        self.problem = Problem(self.rep, self.make_test(est, program), on_event=self.on_engine_event,
                               on_accept=lambda best: self.save_best(best, self._state(est)), level="source")
        engine = Engine(self.problem, source_passes() if "source" in self.levels_run else [], jobs=self.options.jobs,
                        stop=self.stop, deadline=self.shrink_deadline(est.seconds, est.rate),
                        stall=self.options.stall, reorder=self.options.reorder)
        self.save_best(program, self._state(est))
        self.rep.note_failure(program, est.run.output, self.file_name, ran=None if self.resume else self.source)
        best = engine.reduce(program)
        if not self.stop.is_set() and self._runner_misled(best, est):
            restart = self._last_that_holds(self.accepted, est)
            self.log(f"the result ({self.rep.size(best)} tokens) does not fail in a child of its own: an earlier "
                     f"candidate left something behind in the long-lived runner; going on from the last accepted "
                     f"program that does ({self.rep.size(restart)} tokens), with interesting verdicts confirmed")
            self.options.runner = "confirm"
            self.problem.forget()
            self.save_best(restart, self._state(est))
            best = engine.reduce(restart)
        self.stalled = engine.stalled
        if self.stop.is_set():
            self.save_best(best, self._state(est))
        self.log_counts(best)
        return best

    def log_counts(self, best: str) -> None:
        stats = self.problem.stats
        self.log(f"reduced to {self.rep.size(best)} tokens: {stats.tested} tested, {stats.accepted} accepted, "
                 f"{stats.cache_hits} cache hits ({stats.hit_rate():.0%}), {stats.invalid} invalid, "
                 f"{stats.rounds} rounds")
        if self.stalled:
            self.log(f"stopped early: no smaller candidate in {self.options.stall:g} s (--stall)")
        if any(self.runaway.values()):
            self.log("runaway candidates stopped: " + ", ".join(f"{n} {k}" for k, n in self.runaway.items() if n))
        if self.sandbox.reuse and self.options.warm and self.options.runner == "confirm":
            self.log(f"long-lived runner: {self.unconfirmed} interesting verdicts not confirmed in a child of their own")
        if self.timeout is not None:
            self.log(f"candidate timeout at the end: {self.timeout.value:.0f} s (adapted to the interesting runs)")
        for name, counts in stats.per_pass.items():
            self.log(f"  pass {name}: {counts['tested']} tested, {counts['accepted']} accepted")

    def follow_up(self, best: str, est: Established) -> dict | None:
        """After an Enzyme-JAX failure (a missing adjoint, a wrong gradient, a crash), reduce the module
        its pipeline ran for the reduced script into the same folder (repro.mlir, pipeline.txt,
        repro_mlir.py; `reducer.levels.mlir.follow`); a failure there is only logged."""
        from reducer.levels.mlir.follow import applies, reduce_after_script

        if not applies(est.signature, best):
            return None
        budget = min(IR_BUDGET, self.remaining()) if self.deadline is not None else IR_BUDGET
        if budget < IR_MIN:
            self.log(f"IR level: not run (less than {IR_MIN:.0f} s of --max-time left)")
            return None
        try:
            limits = dataclasses.replace(self.limits, timeout=self.bounded(self.limits.timeout))
            return reduce_after_script(best, self.sandbox, limits, self.out, self.log, budget=budget,
                                       platform=self.options.platform, parent=self, on_event=self.on_event)
        except Exception as exc:  # the script result must never be lost to the IR level
            self.log(f"IR level: not reduced ({type(exc).__name__}: {str(exc)[:200]})")
            return None

    # -- outputs --------------------------------------------------------------------------------
    def finish(self, best: str, est: Established, verdict: Verdict, info: dict, stopped: bool, ir) -> dict:
        stats, previous = self.problem.stats if self.problem else None, self.previous
        tested = (stats.tested if stats else 0) + previous.get("tested", 0) + self.traced_counts[0]
        accepted = (stats.accepted if stats else 0) + previous.get("accepted", 0) + self.traced_counts[1]
        hits = stats.cache_hits if stats else 0
        summary = emit.ReductionSummary(
            script_name=self.script.name, original_tokens=self.rep.size(self.source), final_tokens=self.rep.size(best),
            seconds=time.monotonic() - self.started + previous.get("seconds", 0.0), tested=tested, accepted=accepted,
            cache_hits=hits, verified=verdict.text, interrupted=stopped,
            levels=list(self.levels_run or ["source"]) + (["IR"] if ir else []),
            failure_rate=(f"{est.rate:.0%} of {self.options.runs} runs of the original; candidates accepted on "
                          f"any of {self.votes} runs" if est.rate < 1.0 else ""))
        private = (str(self.scratch), str(self.script.resolve().parent))
        ir_args = {"mlir": ir["module"], "pipeline": ir["pipeline"], "mlir_runner": ir["runner"],
                   "mlir_failure": ir["signature"].get("title") or ""} if ir else {}
        write_atomic(self.out / "repro.py", emit.reproducer(best, est.signature, info, summary))
        write_atomic(self.out / "report.md", emit.report(best, est.signature, self.excerpt(est, verdict), info, summary,
                                                         private_paths=private, known=known_line(est.signature),
                                                         traced=self.traced_story, **ir_args))
        if est.rate < 1.0:  # a flaky failure: `reducer bisect` runs each version as often as it was needed here
            from reducer.versions.record import note_runs

            note_runs(self.out, self.votes, est.rate)
        return {"out": str(self.out), "signature": est.signature.to_dict(), "original_tokens": summary.original_tokens,
                "final_tokens": summary.final_tokens, "seconds": round(summary.seconds, 1),
                "tested": summary.tested, "accepted": summary.accepted, "cache_hits": hits, "levels": summary.levels}
