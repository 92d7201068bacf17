"""How one module's candidates run and are judged at the IR level, and how its failure is established.

A `ModuleRuns` runs a module (an MLIR module, HLO text or an XLA dump's modules: `inputs`) and its
candidates; what its first runs learn is returned, never written onto it (`ModuleFailure`, carried by
the established failure as its `module`): the kind of run it fails in (`first_run`: Enzyme-JAX's
pipeline, then the gradient check, `wrong_gradient`; or XLA compiling and running it, then XLA's
results against its unoptimised compilation, `xla_results`, held to the HLO pass that makes them
differ, `xla_passes`), where candidates run (a warm worker, this very process, fresh subprocesses
after a crash or with --cold, or the user's interestingness command), XLA's options and the operation
at fault. A crash's signature names the pass it died in (`crash_pass`) or the phase of XLA.

The module's job (`reducer.levels.mlir.module_job.MlirReduction`) makes one before its chain; after a
script, the IR level makes one for the module Enzyme-JAX ran (`reducer.levels.mlir.script_module`). It is
no job: judging runs through the caller's `judge` (`reducer.job.Job.judge`), and the caller closes it.
"""
from __future__ import annotations

import dataclasses
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import oracles
from oracles.base import Oracle, Signature
from reducer.errors import BAD_MLIR, ReducerError
from reducer.established import EstablishedFailure, Options
from reducer.levels.mlir import crash_pass, first_run, ir_worker, failure_names, module as mm, run_module as mlir_run
from reducer.levels.mlir import wrong_gradient, xla_passes, xla_results
from reducer.levels.mlir.first_run import FirstRun
from reducer.levels.mlir.run_module import ENZYME, GRADIENT, XLA, XLA_KINDS, XLA_RESULTS
from reducer.levels.mlir.worker import IrModule
from reducer.workers.command import runner_for
from reducer.workers.sandbox import Limits, RunResult, Sandbox
from reducer.levels.mlir.representation import MlirModule

#: what each kind of run is, in the log
WHERE = {ENZYME: "Enzyme-JAX's pass pipeline", XLA: "XLA, compiling and running the module",
         XLA_RESULTS: "XLA's results, against XLA with its optimisations off",
         GRADIENT: "the gradient of Enzyme-JAX's pipeline, against finite differences"}
#: where candidates run, in the log and in the report
WHERE_CANDIDATES = {"worker": "in process, in a warm worker", "here": "in this process",
                    "subprocess": "in fresh subprocesses", "script": "through the interestingness command"}


@dataclass(frozen=True)
class ModuleFailure:
    """How a module fails and how its candidates run, as its first runs found it: which module
    (`source_name`, of a dump folder the newest that fails; its `text` as given), the program that
    fails (`original`: with the pipeline of the kind of run it fails in, printed where that fails the
    same), that `kind` of run, the candidates' `limits` and where they run (`isolation`: "worker",
    "here", "subprocess" or "script"), XLA's options for the XLA kinds' runs (`xla`: `options` for the
    compilation, the results kind's `reference`, the `inputs` a program ran it with) and what the
    search for XLA's culprit pass found (`xla_pass`)."""

    source_name: str
    text: str
    original: str
    kind: str
    limits: Limits
    isolation: str = "subprocess"
    xla: Mapping = field(default_factory=dict)
    xla_pass: dict | None = None


class ModuleRuns:
    """One module's runs: `text` as given (a pipeline comment, then the module), `source_name` what
    it is called in the log and the report, `runner_name` what its Python runner is called; `log`
    hears the first runs, `bounded` cuts a run's timeout to end before --max-time; candidates run in
    a sandbox in `scratch` (the caller's folder, which the caller removes). `isolation` (None:
    decided by the first run) is "worker" or "here"; `xla` XLA's options as given."""

    def __init__(self, text: str, source_name: str, options: Options, scratch: Path, log: Callable[[str], None],
                 bounded: Callable[[float], float] = lambda t: t, isolation: str | None = None,
                 runner_name: str = "repro.py", dumped: list | None = None, from_xla: bool = False,
                 xla: dict | None = None):
        self.options, self.log, self.bounded = options, log, bounded
        self.requested = oracles.make_oracle(options.oracle, options.platform, options.hangs)
        self.rep = MlirModule(worker=ir_worker.shared())  # every parse in the IR worker, never here
        self.rep.worker.start()
        self.scratch = Path(scratch)
        self.sandbox = Sandbox(self.scratch / "runs", script_name=runner_name, platform=options.platform,
                               warm=options.warm, warm_modules=("jax", "jax.extend.backend", "enzyme_ad.jax"))
        self.first_limits = Limits(timeout=options.timeout or 120.0, memory_mb=options.memory_mb)
        self.warming = self.warm_up()
        try:
            pipeline, module_text = mm.split(text)
            problem = self.rep.problem(module_text)
            if problem:
                raise ReducerError(f"{source_name}: not a valid MLIR module: {problem}", BAD_MLIR)
        except BaseException:
            self.close()
            raise
        self.source_name, self.runner_name, self.wanted_isolation = source_name, runner_name, isolation
        self.text = mm.join(pipeline, module_text)  # as given: printing may change the failure
        self.header = pipeline
        self.numeric = wrong_gradient.WrongGradient()  # the oracle of the gradient kind's runs
        self.results = xla_results.XlaResults()  # the oracle of the xla-results kind's runs
        self.xla: dict = dict(xla or {})
        #: the other modules of an XLA dump folder, (name, StableHLO), tried in turn when this one does not fail
        self.dumped: list[tuple[str, str]] = list(dumped or [])
        #: the input came from XLA (HLO text or a dump folder): XLA alone runs it, never Enzyme-JAX
        self.from_xla = from_xla

    @property
    def given_kind(self) -> str:
        """The kind of run the module as given starts with: its Enzyme-JAX pipeline, else XLA."""
        return ENZYME if self.header else XLA

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
            self.warming.join()  # its folder lies in the sandbox's
        self.sandbox.close()

    # -- running candidates -----------------------------------------------------------------
    def classify(self, run: RunResult, kind: str) -> tuple[Oracle, Signature] | None:
        """What a run of the module's `kind` of run shows."""
        if kind == GRADIENT and (self.requested is None or self.requested.name == wrong_gradient.FAMILY):
            sig = self.numeric.classify(run)
            if sig:
                return self.numeric, sig
        if kind == XLA_RESULTS and (self.requested is None or self.requested.name == xla_results.FAMILY):
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

    def run_candidate(self, program: str, how: ModuleFailure | None = None, cancel: threading.Event | None = None,
                      fresh: bool = False, xla: dict | None = None, kind: str | None = None) -> RunResult:
        """One run of a candidate module, as `how` says (its kind of run, where, its limits, XLA's
        options), or fresh with the options given before the first runs decided (`how` None, `kind`
        given); `kind` and `xla` for this run alone."""
        pipeline, module_text = mm.split(program)
        limits = how.limits if how is not None else self.first_limits
        command = runner_for(self.requested)
        if command is not None:
            return command.run(program, "repro.mlir", self.bounded(limits.timeout))
        kind = kind or how.kind
        xla = ((how.xla if how is not None else self.xla) if xla is None else xla) if kind in XLA_KINDS else {}
        isolation = how.isolation if how is not None and not fresh else "subprocess"
        if isolation == "worker":
            return self.sandbox.run(IrModule(module_text, pipeline, kind, json.dumps(xla) if xla else ""),
                                    limits, cancel)
        if isolation == "here":
            return mlir_run.run_here(kind, module_text, pipeline, xla)
        return self.sandbox.run(mlir_run.runner_source(kind, module_text, pipeline, native_frames=True, xla=xla),
                                limits, cancel, fresh=fresh)

    def make_test(self, established: EstablishedFailure, judge, keep_aside, stop: threading.Event):
        """The engine's test of a candidate module: it fails as `established` says; another failure met
        is kept aside (`keep_aside(program, seen, ".mlir", "//")`)."""
        oracle, wanted, how = established.oracle, established.signature, established.module

        def test(program: str, cancel: threading.Event) -> bool:
            if stop.is_set() or cancel.is_set():
                return False
            run = self.run_candidate(program, how, cancel)
            if run.cancelled:
                return False
            ok, seen = judge(oracle, wanted, run)
            if seen is None and not run.timed_out and run.returncode not in (0, None):
                other = oracles.detect(run, self.options.platform, own_checks=False)
                seen = other[1] if other else None
            if not ok and seen is not None and seen != wanted:
                keep_aside(program, seen, ".mlir", "//")
            return ok

        return test

    # -- establishing the failure -----------------------------------------------------------
    def first_failure(self, start: str | None = None) -> tuple[FirstRun, ModuleFailure]:
        """How the module fails (or `start`, a module it was reduced to), from a first run in a
        subprocess (`reducer check` stops here): `first_run`, and what it says of the candidates' runs."""
        if self.warming is not None:
            self.warming.join()  # one worker for the first run, not two starting side by side
        found = first_run.first_failure(self, start or self.text)
        xla = {**self.xla, **({"reference": found.reference} if found.reference is not None else {})}
        return found, ModuleFailure(found.source_name, found.text, found.original, found.kind, self.first_limits,
                                    xla=xla)

    def check(self) -> EstablishedFailure:
        """`reducer check`: one run and its signature (naming the pass a crash dies in, or the operation
        whose gradient is wrong, as the reduction's does)."""
        found, how = self.first_failure()
        sig = crash_pass.named(self.rep, found.signature, how.original)
        sig, run, how = self.at_fault(found.oracle, sig, found.run, how, fresh=False)
        return EstablishedFailure(found.oracle, sig, run, 1.0, run.seconds, limits=self.first_limits, module=how)

    def establish(self, judge, start: str | None = None) -> EstablishedFailure:
        """Find how the module (or `start`) fails, and how to run candidates: in the command of an
        oracle that runs them itself, in fresh subprocesses after a crash or with --cold, else in warm
        workers (`judge`: `reducer.job.Job.judge`, or the like)."""
        found, how = self.first_failure(start)
        oracle, sig, run = found.oracle, found.signature, found.run
        self.rep.keep = failure_names.named_ops(sig)
        how = dataclasses.replace(how, isolation=self.where_candidates_run(oracle, sig, run, how, judge))
        fresh = how.isolation not in ("worker", "script")  # the printed form runs where candidates will
        adopted = self.rep.adopt(how.original, lambda p: judge(oracle, sig, self.run_candidate(p, how, fresh=fresh))[0],
                                 self.log)
        how = dataclasses.replace(how, original=adopted)
        sig = crash_pass.named(self.rep, self.rep.name_failing_pass(sig, how.original), how.original)
        sig, run, how = self.at_fault(oracle, sig, run, how, fresh)
        limits = (self.first_limits if self.options.timeout is not None
                  else Limits(timeout=max(20.0, 4 * run.seconds), memory_mb=self.options.memory_mb))
        return EstablishedFailure(oracle, sig, run, 1.0, run.seconds, limits=limits,
                                  module=dataclasses.replace(how, limits=limits))

    def where_candidates_run(self, oracle: Oracle, sig: Signature, run: RunResult, how: ModuleFailure,
                             judge) -> str:
        """The isolation of the candidates' runs: in a warm worker (or this process) where a run there
        fails as the first run in a subprocess did."""
        if oracle.runs_candidates:
            return "script"
        if (run.signal is not None and how.kind not in XLA_KINDS) or run.timed_out or not self.options.warm:
            return "subprocess"
        isolation = self.wanted_isolation or "worker"
        if not judge(oracle, sig, self.run_candidate(how.original, dataclasses.replace(how, isolation=isolation)))[0]:
            self.log("in-process run differs from the subprocess run; candidates run in subprocesses")
            return "subprocess"
        return isolation

    def at_fault(self, oracle: Oracle, sig: Signature, run: RunResult, how: ModuleFailure,
                 fresh: bool) -> tuple[Signature, RunResult, ModuleFailure]:
        """The signature naming the operation at fault, where the kind of run names one: the one whose
        gradient alone is wrong; for a wrong result of XLA held to its culprit pass, the one whose
        result alone differs (with the run against the reference kept, and XLA's options for it)."""
        if how.kind == GRADIENT:
            sig = self.name_operation_at_fault(oracle, sig, run, how, fresh)
        if how.kind == XLA_RESULTS:
            sig, run, how = self.name_xla_operation_at_fault(sig, run, how, fresh)
        return sig, run, how

    def name_operation_at_fault(self, oracle: Oracle, sig: Signature, run: RunResult, how: ModuleFailure,
                                fresh: bool) -> Signature:
        """The wrong gradient's signature naming the operation whose gradient alone is wrong."""
        def wrong(program: str) -> bool:
            return self.numeric.classify(self.run_candidate(program, how, fresh=fresh)) is not None

        self.numeric.op = wrong_gradient.GradientCulprit(self.rep, wrong, self.log).locate(how.original).name
        sig = oracle.classify(run) or sig
        self.rep.keep = failure_names.named_ops(sig)
        return sig

    def name_xla_operation_at_fault(self, sig: Signature, run: RunResult, how: ModuleFailure, fresh: bool):
        """A wrong result of XLA, held to its culprit pass (`xla_passes.hold_to_culprit`), naming the
        operation whose result alone differs: (signature, the run against the reference kept, `how`
        with XLA's options for the candidates and what the search for the pass found)."""
        sig, run, how = xla_passes.hold_to_culprit(self, how, sig, run, fresh)

        def wrong(program: str) -> bool:
            return self.results.classify(self.run_candidate(program, how, fresh=fresh)) is not None

        self.results.op = xla_results.ResultCulprit(self.rep, wrong, self.log).locate(how.original).name
        sig = self.results.classify(run) or sig
        self.rep.keep = failure_names.named_ops(sig)
        return sig, run, how

    def culprit_pass(self, best: str, established: EstablishedFailure) -> dict | None:
        """For a failure of XLA alone, which of XLA's HLO passes it needs (`xla_passes`), searched once
        on `best`: what the search found (as establishing it found, where it searched already)."""
        how = established.module
        if how.kind not in XLA_KINDS or established.oracle.runs_candidates or (how.xla_pass or {}).get("pass"):
            return how.xla_pass
        try:
            return xla_passes.culprit(self, how, best, self.log)
        except Exception as exc:  # an addition to the report: the reduction stands without it
            self.log(f"could not search for XLA's culprit pass: {type(exc).__name__}: {exc}")
            return how.xla_pass

    def described(self, established: EstablishedFailure) -> str:
        """The log line saying how the module fails, where, and where candidates run."""
        how = established.module
        return (f"failure: {established.signature} (in {WHERE[how.kind]}; first run {established.run.seconds:.2f} s; "
                f"candidates run {WHERE_CANDIDATES[how.isolation]})")
