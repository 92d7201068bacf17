"""One IR-level reduction: an MLIR module (an Enzyme-JAX dump, a plain module, HLO text or an XLA
dump folder: `inputs`) down to the smallest module and the shortest pipeline that still fail in
the same way.

How the module fails comes from first runs (`first_run`): its Enzyme-JAX pipeline (then the
gradient check, `wrong_gradient`), or XLA compiling and running it (then XLA's results against
its unoptimised compilation, `xla_results`, held to the HLO pass that makes them differ,
`xla_passes`). A crash's signature names the pass it died in (`crashing`) or the phase of XLA.
Candidates then run in a warm worker (a crash kills only its forked child) or, where the worker's
run differs, each in a fresh subprocess; the pipeline passes and the module passes alternate
until neither shrinks.

`MlirReduction` is this level's `reducer.job.Job`: the job verifies the result in fresh interpreters,
keeps other failures in `also-interesting/`, keeps `best.mlir` and `state.json` for --resume, and
writes `signature.json`, `env.json` and `reduce.log`; `finish` returns `repro.mlir`, `pipeline.txt`
(or `repro.hlo` for XLA), the runner `repro.py` and `report.md` for the job to write (or, after a
script, to hand back to `reducer.levels.mlir.follow.IrLevel`).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import oracles
from oracles.base import Oracle, Signature
from reducer.established import Established, Options
from reducer.job import Job
from reducer.verdict import Verdict
from reducer.levels.mlir import module_report, module as mm, run as mlir_run
from reducer.levels.mlir import crashing, ir_worker, labels, wrong_gradient, pipeline as pl
from reducer.engine import Engine, Problem, Stats
from reducer.errors import BAD_MLIR, NO_RESUME, ReducerError
from reducer.levels.mlir.run import ENZYME, GRADIENT, XLA, XLA_KINDS, XLA_RESULTS
from reducer.levels.mlir import first_run, inputs, xla_passes, xla_results
from reducer.levels.mlir.passes import mlir_passes
from reducer.levels.mlir.pipeline_passes import pipeline_passes
from reducer.levels.mlir.worker import IrModule
from reducer.workers.sandbox import Limits, RunResult, Sandbox

#: what each kind of run is, in the log
WHERE = {ENZYME: "Enzyme-JAX's pass pipeline", XLA: "XLA, compiling and running the module",
         XLA_RESULTS: "XLA's results, against XLA with its optimisations off",
         GRADIENT: "the gradient of Enzyme-JAX's pipeline, against finite differences"}


@dataclass(frozen=True)
class MlirOptions(Options):
    """The job's options, with the IR level's defaults and its own settings."""

    jobs: int = 1
    runs: int = 1
    verify_runs: int = 2
    stall: float | None = None
    #: "worker" (a warm worker process), "here" (this very process), or None: decided by the first run
    isolation: str | None = None
    runner_name: str = "repro.py"
    #: write report.md, signature.json and env.json too (not when the module comes with a script)
    full_outputs: bool = True


class MlirReduction(Job):
    """The job for an MLIR module and its pipeline (`reducer.job.Job` owns what levels share)."""

    suffix, unit, file_name = ".mlir", "operations", "repro.mlir"

    def __init__(self, text: str, source_name: str, out: Path, options: MlirOptions, log=None, on_event=None,
                 resume: bool = False):
        requested = oracles.make_oracle(options.oracle, options.platform, options.hangs)
        rep = mm.MlirModule(worker=ir_worker.shared())  # every parse in the IR worker, never here
        rep.worker.start()
        super().__init__(out, options, on_event, log, resume, scratch_prefix="reducer-mlir-")
        self.requested = requested
        self.sandbox = Sandbox(self.scratch / "runs", script_name=options.runner_name, platform=options.platform,
                               warm=options.warm, warm_modules=("jax", "jax.extend.backend", "enzyme_ad.jax"))
        self.first_limits = Limits(timeout=options.timeout or 120.0, memory_mb=options.memory_mb)
        self.warming = self.warm_up()
        try:
            pipeline, module_text = mm.split(text)
            problem = rep.problem(module_text)
            if problem:
                raise ReducerError(f"{source_name}: not a valid MLIR module: {problem}", BAD_MLIR)
        except BaseException:
            self.close()
            raise
        self.full_outputs = options.full_outputs
        self.source_name = source_name
        self.rep = rep
        self.original = self.text = mm.join(pipeline, module_text)  # as given: printing may change the failure
        self.header = pipeline
        self.isolation = "subprocess"
        self.kind = ENZYME
        self.numeric = wrong_gradient.WrongGradient()  # the oracle of the gradient kind's runs
        self.results = xla_results.XlaResults()  # the oracle of the xla-results kind's runs
        #: XLA's options for the XLA kinds' runs: `options` for the compilation, the results kind's `reference`
        self.xla: dict = {}
        #: what the search for XLA's culprit pass found (`xla_passes.culprit`), once the reduction is verified
        self.xla_pass: dict | None = None
        #: the other modules of an XLA dump folder, (name, StableHLO), tried in turn when this one does not fail
        self.dumped: list[tuple[str, str]] = []
        #: the input came from XLA (HLO text or a dump folder): XLA alone runs it, never Enzyme-JAX
        self.from_xla = False
        self.previous: dict = {}  # the interrupted run's state, when resuming
        self.counts0 = (0, 0)  # operations and pipeline passes of the original
        self.problem: Problem | None = None  # made by `shrink`: one per run, its cache and counts for every round
        self.stats, self.reduce_seconds, self.stalled = Stats(), 0.0, False

    @classmethod
    def from_file(cls, path: Path, out: Path | None, options: MlirOptions, **kw) -> "MlirReduction":
        """The job for an MLIR module, a file of HLO text, or an XLA dump folder (`mlir.inputs`)."""
        path = Path(path)
        given = inputs.read(path)
        job = cls(given.modules[0][1], given.modules[0][0], out or Path.cwd() / f"reduced-{path.stem}", options, **kw)
        job.dumped, job.from_xla = given.modules[1:], given.from_xla
        return job

    def warm_up(self) -> threading.Thread | None:
        """Start the sandbox's warm worker now, while the IR worker imports the bindings (each takes
        a second): a trivial request through the sandbox leaves it idle for the first run."""
        if not self.options.warm or self.requested is not None and self.requested.runs_candidates:
            return None
        thread = threading.Thread(target=self.sandbox.run, args=(IrModule("module {\n}\n", None, XLA), Limits(60.0)),
                                  daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        if self.warming is not None:
            self.warming.join()  # its scratch folder lies in the job's
        super().close()

    # -- running candidates -----------------------------------------------------------------
    def _classify(self, run: RunResult) -> tuple[Oracle, Signature] | None:
        if self.kind == GRADIENT and (self.requested is None or self.requested.name == wrong_gradient.FAMILY):
            sig = self.numeric.classify(run)
            if sig:
                return self.numeric, sig
        if self.kind == XLA_RESULTS and (self.requested is None or self.requested.name == xla_results.FAMILY):
            sig = self.results.classify(run)
            return (self.results, sig) if sig else None
        if self.requested is None:
            hit = oracles.detect(run, self.options.platform, self.options.hangs, own_checks=False)
        else:
            sig = self.requested.classify(run)
            hit = (self.requested, sig) if sig else None
        if hit is None:
            return None
        sharp = mlir_run.WithDiagnostic(hit[0])
        return sharp, sharp.classify(run)

    def run_candidate(self, program: str, cancel: threading.Event | None = None, fresh: bool = False) -> RunResult:
        pipeline, module_text = mm.split(program)
        if self.command is not None:
            return self.command.run(program, self.file_name, self.bounded(self.limits.timeout))
        xla = self.xla if self.kind in XLA_KINDS else {}
        if self.isolation == "worker" and not fresh:
            return self.sandbox.run(IrModule(module_text, pipeline, self.kind, json.dumps(xla) if xla else ""),
                                    self.limits, cancel)
        if self.isolation == "here" and not fresh:
            return mlir_run.run_here(self.kind, module_text, pipeline, xla)
        return self.sandbox.run(mlir_run.runner_source(self.kind, module_text, pipeline, native_frames=True, xla=xla),
                                self.limits, cancel, fresh=fresh)

    def first_failure(self) -> tuple[Oracle, Signature, RunResult]:
        """How the module fails, from a first run in a subprocess (`reducer check` stops here): `first_run`."""
        if self.warming is not None:
            self.warming.join()  # one worker for the first run, not two starting side by side
        return first_run.first_failure(self)

    def check(self) -> Established:
        """`reducer check`: one run and its signature (naming the pass a crash dies in, or the operation
        whose gradient is wrong, as the reduction's does)."""
        oracle, sig, run = self.first_failure()
        sig = crashing.named(self.rep, sig, self.original)
        if self.kind == GRADIENT:
            sig = self.name_operation_at_fault(oracle, sig, run, fresh=False)
        if self.kind == XLA_RESULTS:
            sig, run = self.name_xla_operation_at_fault(oracle, sig, run, fresh=False)
        return Established(oracle, sig, run, 1.0, run.seconds, limits=self.first_limits)

    def establish(self) -> Established:
        """Find how the module fails, and how to run candidates: in the command of an oracle that
        runs them itself, in fresh subprocesses after a crash or with --cold, else in warm workers."""
        oracle, sig, run = self.first_failure()
        self.rep.keep = labels.named_ops(sig)
        if oracle.runs_candidates:
            self.isolation = "script"
        elif (run.signal is not None and self.kind not in XLA_KINDS) or run.timed_out or not self.options.warm:
            self.isolation = "subprocess"
        else:
            self.isolation = self.options.isolation or "worker"
            if not self.judge(oracle, sig, self.run_candidate(self.original))[0]:
                self.log("in-process run differs from the subprocess run; candidates run in subprocesses")
                self.isolation = "subprocess"
        fresh = self.isolation not in ("worker", "script")  # the printed form runs where candidates will
        self.original = self.text = self.rep.adopt(self.original, lambda p: self.judge(
            oracle, sig, self.run_candidate(p, fresh=fresh))[0], self.log)
        sig = crashing.named(self.rep, self.rep.name_failing_pass(sig, self.original), self.original)
        if self.kind == GRADIENT:
            sig = self.name_operation_at_fault(oracle, sig, run, fresh)
        if self.kind == XLA_RESULTS:
            sig, run = self.name_xla_operation_at_fault(oracle, sig, run, fresh)
        limits = (self.first_limits if self.options.timeout is not None
                  else Limits(timeout=max(20.0, 4 * run.seconds), memory_mb=self.options.memory_mb))
        self.est = Established(oracle, sig, run, 1.0, run.seconds, limits=limits)
        return self.est

    def name_operation_at_fault(self, oracle: Oracle, sig: Signature, run: RunResult, fresh: bool) -> Signature:
        """The wrong gradient's signature naming the operation whose gradient alone is wrong."""
        def wrong(program: str) -> bool:
            return self.numeric.classify(self.run_candidate(program, fresh=fresh)) is not None

        self.numeric.op = wrong_gradient.locate(self.rep, self.original, wrong, self.log)
        sig = oracle.classify(run) or sig
        self.rep.keep = labels.named_ops(sig)
        return sig

    def name_xla_operation_at_fault(self, oracle: Oracle, sig: Signature, run: RunResult, fresh: bool):
        """A wrong result of XLA, held to its culprit pass (`xla_passes.hold_to_culprit`), naming the
        operation whose result alone differs: (signature, the run against the reference kept)."""
        sig, run = xla_passes.hold_to_culprit(self, sig, run, fresh)

        def wrong(program: str) -> bool:
            return self.results.classify(self.run_candidate(program, fresh=fresh)) is not None

        self.results.op = xla_results.locate(self.rep, self.original, wrong, self.log)
        sig = self.results.classify(run) or sig
        self.rep.keep = labels.named_ops(sig)
        return sig, run

    def follow_up(self, best: str, est: Established):
        """For a failure of XLA alone: which of XLA's HLO passes it needs (`xla_passes`)."""
        if self.kind in XLA_KINDS and not est.oracle.runs_candidates and not (self.xla_pass or {}).get("pass"):
            try:
                self.xla_pass = xla_passes.culprit(self, best, self.log)
            except Exception as exc:  # an addition to the report: the reduction stands without it
                self.log(f"could not search for XLA's culprit pass: {type(exc).__name__}: {exc}")
        return None

    def make_test(self, oracle: Oracle, wanted: Signature):
        def test(program: str, cancel: threading.Event) -> bool:
            if self.stop.is_set() or cancel.is_set():
                return False
            run = self.run_candidate(program, cancel)
            if run.cancelled:
                return False
            ok, seen = self.judge(oracle, wanted, run)
            if seen is None and not run.timed_out and run.returncode not in (0, None):
                other = oracles.detect(run, self.options.platform, own_checks=False)
                seen = other[1] if other else None
            if not ok and seen is not None and seen != wanted:
                self.keep_aside(program, seen)
            return ok

        return test

    def fresh_run(self, program: str) -> RunResult:
        return self.run_candidate(program, fresh=True)

    def original_program(self) -> str:
        return self.original

    # -- the whole job ----------------------------------------------------------------------
    def _engine(self, problem: Problem, passes, deadline) -> Engine:
        return Engine(problem, passes, jobs=self.options.jobs if self.isolation != "here" else 1, stop=self.stop,
                      deadline=deadline, stall=self.options.stall, reorder=self.options.reorder)

    def reduce(self, program: str, problem: Problem, culprit, deadline) -> str:
        """Pipeline passes, then module passes, again and again until neither shrinks. The pipeline
        goes first: it has few candidates, and each pass it loses makes every later run faster."""
        pipe_rep = pl.PipelineText()
        while not self.stop.is_set() and not (deadline and time.monotonic() > deadline):
            before = program
            pipeline, module_text = mm.split(program)
            if pipeline:
                part = problem.part(pipe_rep, lambda candidate, m=module_text: mm.join(candidate, m), "pipeline")
                program = mm.join(self._engine(part, pipeline_passes(), deadline).reduce(pipeline), module_text)
            passes = mlir_passes(culprit, rep=self.rep, log=self.log)
            engine = self._engine(problem, passes, deadline)
            program = engine.reduce(program)
            self.stalled = engine.stalled
            for p in passes:
                if p.errors:
                    self.log(f"pass {p.name} stopped early {len(p.errors)} time(s): {p.errors[0][:200]}")
            pipeline = mm.split(program)[0]
            self.log(f"round: {self.rep.size(program)} operations, {pipe_rep.size(pipeline) if pipeline else 0} "
                     f"passes, {problem.stats.tested} tested")
            if program == before or self.stalled:
                break
        return program

    # -- the job's steps (reducer.job.Job.run chains them) ---------------------------------------
    def begin(self) -> tuple[Established, str]:
        est = self.establish()
        sig, first = est.signature, est.run
        pipeline0 = mm.split(self.original)[0]
        self.counts0 = (self.rep.size(self.original), pl.PipelineText().size(pipeline0) if pipeline0 else 0)
        what = WHERE[self.kind]
        self.log(f"reducing {self.source_name} ({self.counts0[0]} operations"
                 + (f", pipeline of {self.counts0[1]} passes" if pipeline0 else "") + f"), output in {self.out}")
        where = {"worker": "in process, in a warm worker", "here": "in this process",
                 "subprocess": "in fresh subprocesses", "script": "through the interestingness command"}[self.isolation]
        self.log(f"failure: {sig} (in {what}; first run {first.seconds:.2f} s; candidates run {where})")
        return est, self.original

    def resume_from(self) -> tuple[Established, str]:
        """The interrupted run's best module, checked to still fail in the same way."""
        state, best, wanted = self.read_state()
        if state.get("source_sha1") != hashlib.sha1(self.text.encode()).hexdigest():
            raise ReducerError(f"{self.out}: was made from another version of {self.source_name}", NO_RESUME)
        self.original = best
        est = self.establish()
        if not est.oracle.same(wanted, est.signature):
            raise ReducerError(f"{self.out}/best.mlir no longer shows {wanted} (saw {est.signature})", NO_RESUME)
        self.previous, self.counts0 = state, tuple(state.get("counts0", (0, 0)))
        self.log(f"resuming {self.out}: {self.rep.size(best)} operations, {state.get('tested', 0)} candidates "
                 f"tested before")
        self.est = est = dataclasses.replace(est, signature=wanted)
        return est, best

    def _state(self) -> dict:
        stats, previous = self.stats, self.previous
        return {"source": self.source_name, "source_sha1": hashlib.sha1(self.text.encode()).hexdigest(),
                "signature": self.est.signature.to_dict(), "counts0": list(self.counts0),
                "tested": previous.get("tested", 0) + stats.tested,
                "accepted": previous.get("accepted", 0) + stats.accepted,
                "seconds": previous.get("seconds", 0.0) + stats.seconds}

    def shrink(self, program: str, est: Established) -> str:
        self.problem = Problem(self.rep, self.make_test(est.oracle, est.signature), on_event=self.on_event,
                               on_accept=lambda best: self.save_best(best, self._state()), level="IR")
        self.stats = self.problem.stats
        self.save_best(program, self._state())
        start = time.monotonic()
        deadline = self.shrink_deadline(max(est.seconds, 1.0))
        best = self.reduce(program, self.problem, labels.culprit_of(est.signature), deadline)
        self.reduce_seconds = seconds = time.monotonic() - start
        if self.stop.is_set():
            self.save_best(best, self._state())
        stats, pipeline = self.stats, mm.split(best)[0]
        self.log(f"reduced to {self.rep.size(best)} operations ({', '.join(self.rep.ops(best))})"
                 + (f", pipeline of {pl.PipelineText().size(pipeline)} passes: {pipeline}" if pipeline else "")
                 + f"; {stats.tested} tested in {seconds:.1f} s ({stats.tested / seconds if seconds else 0:.1f} "
                 f"per second), {stats.accepted} accepted, {stats.cache_hits} cache hits")
        for name, counts in stats.per_pass.items():
            self.log(f"  pass {name}: {counts['tested']} tested, {counts['accepted']} accepted")
        if self.stalled:
            self.log(f"stopped early: no smaller candidate in {self.options.stall:g} s (--stall)")
        return best

    def finish(self, best: str, est: Established, verdict: Verdict, info: dict, stopped: bool, follow) -> dict:
        """What the module's reduction leaves (`follow`, a following level's result: none follows a module)."""
        sig, stats, previous = est.signature, self.stats, self.previous
        pipeline, module_text = mm.split(best)
        ops1, passes1 = self.rep.size(best), pl.PipelineText().size(pipeline) if pipeline else 0
        summary = module_report.ModuleSummary(
            source_name=self.source_name, kind=self.kind, original_ops=self.counts0[0], final_ops=ops1,
            original_passes=self.counts0[1], final_passes=passes1,
            seconds=time.monotonic() - self.started + previous.get("seconds", 0.0),
            tested=stats.tested + previous.get("tested", 0), accepted=stats.accepted + previous.get("accepted", 0),
            cache_hits=stats.cache_hits, verified=verdict.text, interrupted=stopped,
            isolation={"worker": ", in process in a warm worker", "here": ", in process",
                       "subprocess": ", each in a fresh subprocess"}.get(self.isolation, ""),
            xla=self.xla if self.kind in XLA_KINDS else None, xla_pass=self.xla_pass,
            from_jax="jax.result_info" in self.text)
        if self.xla_pass and self.xla_pass.get("pass") and not sig.get("xla-pass"):
            sig = Signature(sig.family, sig.fields + (("xla-pass", self.xla_pass["pass"]),),
                            f"{sig.title} (XLA pass `{self.xla_pass['pass']}`)", sig.excerpt)
        hlo_text = inputs.as_hlo(self.rep.worker, module_text, self.log) if self.kind in XLA_KINDS else None
        runner_text = module_report.runner(module_text, pipeline, sig, info, summary, self.options.runner_name)
        files = {"repro.mlir": best, **({"pipeline.txt": pipeline + "\n"} if pipeline else {}),
                 **({"repro.hlo": hlo_text} if hlo_text else {}), self.options.runner_name: runner_text}
        if self.full_outputs:
            files["report.md"] = module_report.report(module_text, pipeline, runner_text, sig, self.excerpt(est, verdict),
                                                  info, summary, private_paths=(str(self.scratch),),
                                                  runner_name=self.options.runner_name, hlo_text=hlo_text)
            files["signature.json"] = sig.to_json() + "\n"
        seconds = self.reduce_seconds
        return {"out": str(self.out), "signature": sig.to_dict(), "kind": self.kind, "xla_pass": self.xla_pass,
                "original_ops": self.counts0[0], "final_ops": ops1, "original_passes": self.counts0[1],
                "final_passes": passes1, "ops": self.rep.ops(best), "module": module_text,
                "pipeline": pipeline, "opt_command": pl.opt_command(pipeline) if pipeline else None,
                "runner": self.options.runner_name, "runner_text": runner_text,
                "seconds": round(summary.seconds, 1), "reduce_seconds": round(seconds, 2),
                "tested": summary.tested, "accepted": summary.accepted, "cache_hits": stats.cache_hits,
                "per_second": round(stats.tested / seconds, 1) if seconds else 0.0, "isolation": self.isolation,
                "files": files}
