"""One reduction of a Python script: the chain jaxpr -> source -> IR.

`Reduction` is the script's `reducer.levels.chain.ChainJob`: `establish` runs the original (several
times, to measure how reliably it fails) and fixes what the reduction keeps in a frozen
`EstablishedFailure` (oracle, signature, limits, votes, watches, data files); the chain runs its levels
(`JaxprLevel` when it applies, then `reducer.levels.source.level.SourceLevel`, which gets the job's
test and lets `reducer.second_look.restart` look again at its result), each keeping its best program
so far for --resume, which goes on from the level that was running (`resume_from`); `finish` returns
`repro.py` and `report.md` (the job writes them and the rest). After a failure in the Enzyme pipeline,
the IR level follows on the module Enzyme-JAX ran for the result (`follow_levels`: `IrLevel`).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import oracles
from oracles.base import Oracle, Signature
from reducer import bug_report, counterfactual, earlier_tests, fixes, second_look, xla_culprit
from reducer.data_literals import standalone
from reducer.engine import Event
from reducer.errors import NO_BACKEND, NO_RESUME, ReducerError
from reducer.faults.ahead import CANCEL, cancelled_by
from reducer.readers.inputs import after_earlier_tests, argument_files, data_files, read_input, with_arguments
from reducer.established import EstablishedFailure, Options, default_memory_mb
from reducer.verdict import Verdict, last_words, no_backend, not_failing
from reducer.levels import fault_finders
from reducer.levels.base import LevelResult
from reducer.levels.chain import ChainJob
from reducer.levels.jaxpr.level import JaxprLevel, parse_levels
from reducer.levels.mlir.ir_level import IrLevel
from reducer.levels.source import check_values
from reducer.levels.source.level import ScriptJob, SourceLevel, source_passes  # the job lends them
from reducer.levels.source.representation import PythonSource
from reducer.timeouts import AdaptiveTimeout
from reducer.workers.imports import preload_modules
from reducer.workers.sandbox import Limits, RunResult, Sandbox

__all__ = ["Options", "EstablishedFailure", "Reduction", "parse_levels"]


class Reduction(ChainJob):
    """The job for a Python script (or a test's node id made standalone)."""

    def __init__(self, script: Path, out: Path | None, options: Options, on_event=None, log=None,
                 resume: bool = False, known: Callable[[Signature], str] | None = None, args: tuple = (),
                 after_earlier: bool = False):
        path, source = read_input(Path(script), after_earlier)  # a .py file, a test's node id or a notebook
        self.notebook = Path(str(script)).suffix == ".ipynb"
        self.latest_seconds: float | None = None  # the latest interesting candidate's run (the final checks' size)
        self.fix: str | None = None  # the counterfactual every candidate survived (`reducer.counterfactual`)
        self.fixes_found: dict[tuple, str | None] = {}  # `counterfactual.fix_to_survive`'s, asked once each
        super().__init__(Path(out) if out else Path.cwd() / f"reduced-{path.stem}", options, on_event, log, resume)
        # the arguments given after `--`, baked in as `sys.argv = [...]`; the files they name go next to candidates
        args, arg_files = argument_files(args, stage=self.scratch / "arguments")
        source = with_arguments(source, path.name, args)
        self.given, self.args, self.after_earlier = Path(script), args, after_earlier
        self.known = known or (lambda sig: "")  # the corpus case with this signature (the CLI's corpus.known_line)
        self.script, self.source = path, source
        self.file_name = path.name
        self.rep = PythonSource()
        self.requested = oracles.make_oracle(options.oracle, options.platform, options.hangs)
        self.chosen = parse_levels(options.levels)  # None: auto
        self.needs_gradients = self.requested is None or self.requested.needs_gradient_checks
        self.own_sandbox = Sandbox(self.scratch / "runs", script_name=path.name,
                               data_files=tuple(dict.fromkeys(data_files(path, source) + arg_files)),
                               platform=options.platform, check_gradients=self.needs_gradients, warm=options.warm,
                               warm_modules=preload_modules(source), reuse=options.runner != "off",
                               compile_cache=self.scratch / "jax-cache")
        # CUDA reserves far more address space than memory: an address-space limit would stop it starting
        self.memory_mb = options.memory_mb or (None if options.platform == "gpu" else default_memory_mb(options.jobs))
        self.first_limits = Limits(timeout=options.timeout or 300.0, memory_mb=self.memory_mb)
        self.runaway = {"timed out": 0, "killed by a signal": 0, "out of memory": 0, "output cut": 0}
        self.timeout: AdaptiveTimeout | None = None  # set once the first runs are timed
        self.unconfirmed = 0  # runner verdicts that a child of its own did not confirm

    # -- running programs -----------------------------------------------------------------------
    def execute(self, source: str, limits: Limits, cancel: threading.Event | None = None,
                data_files: tuple | None = None, **how) -> RunResult:
        """One run of `source`: by the oracle itself when it runs candidates (the user's command),
        else in the sandbox (`how`: fresh, isolated; `data_files` instead of its own); never past
        --max-time."""
        limits = dataclasses.replace(limits, timeout=self.bounded(limits.timeout))
        if self.command is not None:
            return self.command.run(source, self.file_name, limits.timeout)
        box = self.sandbox if data_files is None else self.sandbox.replace(data_files=data_files)
        run = box.run(source, limits, cancel, **how)
        run = self.timed_fresh(run) if how.get("fresh") else run
        if self.fault_finder is None or run.cancelled:
            return run
        with cancelled_by(cancel):  # the runs that place its fault stop with the candidate
            return self.fault_finder.attach(source, run)

    def fresh_run(self, program: str) -> RunResult:
        return self.execute(program, self.limits, fresh=True)

    def original_program(self) -> str:
        return self.source

    def classify(self, run: RunResult) -> tuple[Oracle, Signature] | None:
        if self.requested is None:
            return oracles.detect(run, self.options.platform, self.options.hangs)
        sig = self.requested.classify(run)
        return (self.requested, sig) if sig else None

    # -- the first runs -------------------------------------------------------------------------
    @functools.cached_property
    def with_earlier(self) -> str | None:
        """The test after the tests before it in its module, asked only where it passes alone or resumes."""
        return None if self.after_earlier else after_earlier_tests(self.given, self.args)

    def establish(self, runs: int | None = None) -> EstablishedFailure:
        runs = runs or self.options.runs
        with ThreadPoolExecutor(max_workers=max(1, min(runs, self.options.jobs))) as pool:
            results = list(pool.map(lambda _: self.execute(self.source, self.limits), range(runs)))
        reason = no_backend(results[0])
        if reason:
            raise ReducerError(f"{self.script}: {reason}", NO_BACKEND)
        found = [self.classify(run) for run in results]
        if not any(found):
            earlier_tests.check_alone(self, results[0])
            raise not_failing(self.script, results[0], self.requested, self.options)
        found = counterfactual.why_it_stops(self, results, found) if self.requested is None else found
        oracle, sig = first = next(h for h in found if h)
        rate = sum(1 for h in found if h and oracle.same(sig, h[1])) / len(results)
        slowest = max(r.seconds for r in results)
        no_checks = self.needs_gradients and not oracle.needs_gradient_checks
        limits = (self.first_limits if self.options.timeout is not None
                  else Limits(timeout=max(20.0, 4 * slowest), memory_mb=self.memory_mb))
        established = EstablishedFailure(
            oracle, sig, results[found.index(first)], rate, slowest, limits=limits,
            votes=max(3, runs) if rate < 1.0 else 1, watches=() if no_checks else tuple(oracle.watches),
            data_files=tuple(self.sandbox.data_files), gradient_checks=False if no_checks else None)
        self.established = established  # the sandbox is set up as it says (`Job.sandbox`) for the finder too
        self.established = established = self.locate(established)
        return established

    def finder_runs(self, oracle: Oracle, limits: Limits) -> fault_finders.Runs:
        """What a fault finder runs programs with: a script in a child of its own (a fix patches JAX in
        the process it runs in), within --max-time, stopped with the candidate it is for."""
        def script(text: str) -> RunResult:
            bounded = dataclasses.replace(limits, timeout=self.bounded(limits.timeout))
            return self.sandbox.run(text, bounded, CANCEL.get(), isolated=True)

        return fault_finders.Runs(lambda: self.sandbox, limits, oracle, script, self.log)

    def locate(self, established: EstablishedFailure) -> EstablishedFailure:
        """The established failure naming its fault, with the finder that places it; none where the
        program counts on JAX's NaN check and fails because it let the value through."""
        if fix := counterfactual.value_check_missed(self, self.source, established.signature):
            return dataclasses.replace(established, fix=fix)
        finder = None if established.oracle.runs_candidates else fault_finders.for_original(
            self.finder_runs(established.oracle, established.limits), established.signature, established.run)
        if finder is None:
            return established
        sig, run = finder.establish(self.source, established.run, established.signature)
        return dataclasses.replace(established, signature=sig, run=run, fault_finder=finder)

    @property
    def fault_finder(self) -> fault_finders.FaultFinder | None:
        """What places the established failure's fault in each run (`reducer.levels.fault_finders`)."""
        return self.established.fault_finder if self.established is not None else None

    def check(self) -> EstablishedFailure:
        """`reducer check`: one run and its signature."""
        return self.establish(runs=1)

    def begin(self) -> tuple[EstablishedFailure, str]:
        established = self.establish()
        if established.fix is None and (fix := counterfactual.twins_first(self, self.source, established.signature)):
            self.established = established = dataclasses.replace(established, fix=fix)
        self.log(f"reducing {self.script} ({self.rep.size(self.source)} tokens), output in {self.out}")
        self.log(f"failure: {established.signature} (seen in {established.rate:.0%} of {self.options.runs} runs, "
                 f"slowest {established.seconds:.1f} s; candidate timeout {self.limits.timeout:.0f} s)")
        if self.fault_finder is not None:
            self.log(self.fault_finder.finding)
        known = self.known(established.signature)
        if known:
            self.log(f"{known}: the corpus has this bug already")
        return established, self.rep.normalize(self.source)

    def resume_from(self) -> tuple[EstablishedFailure, str]:
        """The interrupted run's oracle, signature and level, and the script the chain goes on from,
        checked to still fail: the best script it kept (the original, when it was in the jaxpr level)."""
        state, best, wanted = self.read_state()
        earlier_tests.check_resumed(self, state.get("script_sha1"))
        self.requested = oracle = oracles.make_oracle(state["oracle"], state.get("platform", "cpu"),
                                                      self.options.hangs)
        self.resume_level(state, best)
        limits = Limits(timeout=self.options.timeout or state.get("timeout", 120.0), memory_mb=self.memory_mb)
        established = EstablishedFailure(
            oracle, wanted, None, state.get("rate", 1.0), 0.0, limits=limits, votes=state.get("votes", 1),
            data_files=tuple(self.sandbox.data_files) + self.kept_data(),
            gradient_checks=False if not oracle.needs_gradient_checks else None,
            fault_finder=fault_finders.for_wanted(self.finder_runs(oracle, limits), wanted))  # named again
        self.established = established
        level, place = self.resumed_level()
        what, script = f"{self.out}/best.py", best  # a level of scripts goes on from its own best script
        if level.suffix != SourceLevel.suffix and place == 0:  # traced from the original script
            what, script = str(self.script), self.rep.normalize(self.source)
        elif level.suffix != SourceLevel.suffix:  # a level after the scripts' followed the best script kept
            if not (self.out / "best.py").is_file():
                raise ReducerError(f"{self.out}: nothing to resume (no best.py: the script the {level.name} level "
                                   f"followed)", NO_RESUME)
            script = (self.out / "best.py").read_text()
        run = self.execute(script, limits)
        ok, seen = self.judge(oracle, wanted, run)
        if not ok:
            raise ReducerError(f"{what} no longer shows {wanted} (saw {seen or last_words(run)})", NO_RESUME)
        self.log(f"resuming {self.out}: {self.rep.size(script)} tokens, {state.get('tested', 0)} candidates "
                 f"tested before; at the {level.name} level")
        self.established = established = dataclasses.replace(established, run=run, program=script)
        return established, script

    def state(self, established: EstablishedFailure) -> dict:
        """What --resume needs to know the failure again without establishing it."""
        return {"script": str(self.script.resolve()), "script_sha1": earlier_tests.program_hash(self.source),
                "oracle": self.options.oracle if self.requested is not None else established.oracle.name,
                "platform": self.options.platform, "signature": established.signature.to_dict(),
                "timeout": self.limits.timeout, "votes": established.votes, "rate": established.rate}

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

    def make_test(self, established: EstablishedFailure, program: str | None = None, confirm: bool = False):
        """The test: fails as `established` did (and, given the starting `program`, on its own check:
        counterfactual); with `confirm` (or --runner confirm), the long-lived runner's interesting
        verdicts confirmed in a child of their own."""
        confirm = confirm or self.options.runner == "confirm"
        oracle, wanted = established.oracle, established.signature
        if self.options.timeout is None and not self.options.hangs and not oracle.runs_candidates:
            self.timeout = AdaptiveTimeout(self.limits.timeout)
        going_on = self.verified is not None and program == self.verified[0]  # the fix it survived holds
        fix = self.fix if going_on else counterfactual.fix_to_survive(self, program, wanted, established.fix) \
            if program and not oracle.runs_candidates else None
        self.fix = fix or self.fix
        ran, run = established.program or self.source, established.run  # what `established` ran
        if going_on:  # from the verified result, whose final checks ran it fresh
            ran, run = self.verified
        elif program and program != self.source and self.latest_seconds is None:
            # a level's result to go on from (a written-back script): the final checks run one of its size,
            # fresh, and its own check is what candidates are guarded by
            limits = dataclasses.replace(self.candidate_limits(), timeout=self.bounded(self.candidate_limits().timeout))
            ran, run = program, self.timed_fresh(self.sandbox.run(program, limits, fresh=True))
            self.latest_seconds = run.seconds
            if self.timeout is not None and not run.timed_out:  # its candidates' timeout follows it, not the original
                self.timeout.record(run.seconds)
        guard = check_values.guard_for(wanted, ran, run, self.file_name, self.log)

        def test(source: str, cancel: threading.Event) -> bool:
            for _ in range(established.votes):
                if self.stop.is_set() or cancel.is_set():
                    return False
                run = self.execute(source, self.candidate_limits(), cancel)
                self._count_runaway(run)
                ok, seen = self.judge(oracle, wanted, run)
                if ok and run.reused and confirm:
                    run, (ok, seen) = second_look.confirm(self, source, oracle, wanted, cancel)
                if ok and fix and not counterfactual.survives(self, source, fix, cancel):
                    return False  # it stops whether or not the value is wrong, or for another part's fault
                if ok and guard and not guard(source, run.output):
                    return False  # its own check reads constants now, or fails for another reason (check_values)
                if ok:
                    self.latest_seconds = run.seconds  # the final checks run programs of about this size
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

    # -- shrinking ------------------------------------------------------------------------------
    def on_engine_event(self, event: Event) -> None:
        source = event.level == SourceLevel.name  # the levels before write their own lines
        if source and event.kind == "accept":  # in the log file only: the progress display shows it live
            self.log_lines.append(f"[{time.strftime('%H:%M:%S')}] {event.size} tokens after "
                                  f"{event.stats.seconds:.0f} s ({event.pass_name})")
        elif source and event.kind == "round" and self.options.reorder and event.stats.rounds > 1:
            self.log_lines.append(f"[{time.strftime('%H:%M:%S')}] round {event.stats.rounds}, passes by last "
                                  f"round's yield: {event.pass_name}")
        self.on_event(event)

    def levels(self) -> tuple:
        """The chain, in order: the traced program's level, then the source level."""
        job = ScriptJob(test_for=self.make_test, restart=lambda established, best: second_look.restart(
            self, best, established))
        return (JaxprLevel(self.chosen, self.rep),
                SourceLevel(self.rep, job, self.chosen, self.source, self.file_name, source_passes))

    def after_chain(self, program: str, established: EstablishedFailure) -> str:
        """The counts logged, and the program with its data written in, before the final checks."""
        self.log_counts(program)
        return standalone.after_shrinking(self, program, established)

    def context(self, established: EstablishedFailure, level):
        """What a level gets from this job: its progress events, and when to stop shrinking."""
        return dataclasses.replace(super().context(established, level), on_event=self.on_engine_event,
                                   until=lambda: self.shrink_until(established))

    def shrink_until(self, established: EstablishedFailure) -> float | None:
        """When shrinking stops: before the result's second look (`second_look.restart`), the final checks,
        the data written in and XLA's culprit search."""
        seconds = established.seconds if self.latest_seconds is None else self.latest_seconds
        if (when := standalone.deadline(self, established, seconds)) is None:
            return None
        look = 1.5 * seconds + 2.0 if second_look.trusts_runner(self, established) else 0.0
        return when - xla_culprit.reserve(self, established, seconds, self.fix) - look

    def log_counts(self, best: str) -> None:
        stats = self.counts.get(SourceLevel.name)
        if stats is None:  # the source level did not run (stopped before it, or resumed after it)
            return
        self.log(f"reduced to {self.rep.size(best)} tokens: {stats.tested} tested, {stats.accepted} accepted, "
                 f"{stats.cache_hits} cache hits ({stats.hit_rate():.0%}), {stats.invalid} invalid, "
                 f"{stats.rounds} rounds")
        if self.stalled:
            self.log(f"stopped early: no smaller candidate in {self.stall:g} s (--stall)")
        if any(self.runaway.values()):
            self.log("runaway candidates stopped: " + ", ".join(f"{n} {k}" for k, n in self.runaway.items() if n))
        if self.sandbox.reuse and self.options.warm and (self.unconfirmed or self.options.runner == "confirm"):
            self.log(f"long-lived runner: {self.unconfirmed} interesting verdicts not confirmed in a child of their "
                     f"own")
        if self.timeout is not None:
            self.log(f"candidate timeout at the end: {self.timeout.value:.0f} s (adapted to the interesting runs)")
        for name, counts in stats.per_pass.items():
            self.log(f"  pass {name}: {counts['tested']} tested, {counts['accepted']} accepted")

    def follow_levels(self) -> tuple:
        """After an Enzyme-JAX failure, the IR level on the module its pipeline ran for the result."""
        return (IrLevel(),)

    # -- outputs --------------------------------------------------------------------------------
    def finish(self, best: str, established: EstablishedFailure, verdict: Verdict, info: dict, stopped: bool,
               follow: LevelResult | None) -> dict:
        tested = self.previous.get("tested", 0) + sum(r.tested for r in self.chain)
        accepted = self.previous.get("accepted", 0) + sum(r.accepted for r in self.chain)
        hits = sum(r.cache_hits for r in self.chain)
        summary = bug_report.ReductionSummary(
            script_name=self.script.with_suffix(".ipynb").name if self.notebook else self.script.name,
            original_tokens=self.rep.size(self.source), final_tokens=self.rep.size(best),
            seconds=time.monotonic() - self.started + self.previous.get("seconds", 0.0), tested=tested,
            accepted=accepted,
            cache_hits=hits, verified=verdict.text, interrupted=stopped,
            levels=list(self.levels_run or [SourceLevel.name]) + list(follow.levels if follow else ()),
            failure_rate=(f"{established.rate:.0%} of {self.options.runs} runs of the original; candidates accepted on "
                          f"any of {established.votes} runs" if established.rate < 1.0 else ""))
        private = (str(self.scratch), str(self.script.resolve().parent))
        story = " ".join([r.story for r in self.chain if r.story] + standalone.notes(self.data))
        sig, said, culprit = fixes.for_report(self, best, established, self.fix, searched=verdict.ok and not stopped)
        repro = bug_report.reproducer(best, sig, info, summary, fixed_by=said["fixed_by"])
        excerpt = bug_report.as_run_of_repro(self.excerpt(established, verdict), self.script.name,
                                             len(repro.splitlines()) - len(best.splitlines()))
        files = {"repro.py": repro,
                 "report.md": bug_report.report(best, sig, excerpt, info, summary,
                                          private_paths=private, known=self.known(sig), traced=story,
                                          **said, **(follow.report if follow else {}))}
        if self.fix:  # the bug taken away, for `corpus check` to take it away again
            files["signature.json"] = json.dumps({**established.signature.to_dict(), "fixed_by": self.fix},
                                                 indent=2) + "\n"
        if self.notebook:  # a notebook's reproducer is a script, and a one-cell notebook beside it
            from reducer.readers.notebook import notebook_of

            files["repro.ipynb"] = notebook_of(files["repro.py"])
        standalone.write(self.data, self.out)  # repro_data.npz and the data files the reproducer still reads
        if established.rate < 1.0:  # a flaky failure: `reducer bisect` runs each version as often as it was needed here
            from reducer.versions.record import note_runs

            note_runs(self.out, established.votes, established.rate)
        return {"out": str(self.out), "signature": established.signature.to_dict(),
                "original_tokens": summary.original_tokens,
                "final_tokens": summary.final_tokens, "seconds": round(summary.seconds, 1),
                "size": {"unit": self.unit, "from": summary.original_tokens, "to": summary.final_tokens},
                "tested": summary.tested, "accepted": summary.accepted, "cache_hits": hits, "levels": summary.levels,
                **({"xla_pass": {"pass": culprit}} if culprit else {}),  # as a module's result gives it
                "files": files}
