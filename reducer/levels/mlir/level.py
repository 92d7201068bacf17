"""One IR-level reduction: an MLIR module (an Enzyme-JAX dump or a plain module) down to the
smallest module and the shortest pipeline that still fail in the same way.

The input is either an Enzyme-JAX dump (`// PIPELINE` on the first line, then the module) or a
plain module (say from `jax.jit(f).lower(...).as_text()`): then XLA's compiler is the oracle when
it cannot compile the module, and otherwise the pipeline is the single `enzyme-wrap` pass that
`enzyme_jax_ir` would run (reverse mode of the entry function).
The first run is a subprocess (the runner script, as a user would run it): a crash there means
every candidate runs in a fresh forked child; an error means candidates run in process, in a warm
worker that runs one candidate after another (a crash kills only that worker's forked child). The
pipeline passes and the module passes then alternate until neither shrinks; the result is verified in fresh
interpreters and written as `repro.mlir`, `pipeline.txt`, the runner `repro.py`, `report.md`,
`signature.json`, `env.json` and `reduce.log`.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import oracles
from reducer.inputs import read_text
from oracles.base import Oracle, Signature
from oracles.generic import Script
from reducer import env as envmod
from reducer.levels.mlir import emit as mlir_emit, module as mm, run as mlir_run
from reducer.levels.mlir import pipeline as pl
from reducer.engine import Engine, Event, Stats
from reducer.errors import BAD_MLIR, NO_FAILURE, OTHER_FAILURE, ReducerError
from reducer.files import write_atomic
from reducer.levels.mlir.run import ENZYME, XLA
from reducer.levels.mlir.passes import _ir, mlir_passes
from reducer.levels.mlir.pipeline_passes import PIPELINE_PASSES, pipeline_passes
from reducer.workers.sandbox import Limits, RunResult, Sandbox

DUMPED = re.compile(r"Enzyme MLIR dumped to (?P<path>\S+\.mlir)")


@dataclass
class MlirOptions:
    oracle: str = "auto"
    timeout: float | None = None
    platform: str = "cpu"
    jobs: int = 1
    max_time: float | None = None
    verify_runs: int = 2
    #: "worker" (a warm worker process), "here" (this very process), or None: decided by the first run
    isolation: str | None = None
    runner_name: str = "repro.py"
    #: write report.md, signature.json and env.json too (not when the module comes with a script)
    full_outputs: bool = True


def read_module(path: Path) -> str:
    """The text of an .mlir file, with one clear line for each kind of bad input."""
    return read_text(path, "an MLIR module in text form")


def default_pipeline(module_text: str) -> str:
    """The pass enzyme_jax_ir runs for reverse mode, for the module's entry function."""
    e = _ir.Edit(mm.join(None, module_text))
    name = e.entry_name()
    f = e.function(name)
    ft = f.attributes["function_type"].value
    return pl.wrap_pipeline(name, [_ir.activity(t) for t in ft.inputs], [_ir.activity(t) for t in ft.results])


def culprit_of(sig: Signature) -> tuple[str, str] | None:
    """The operation a signature names, for the pass that keeps only it."""
    if sig.family == "adjoint-missing" and sig.get("source") == "enzyme" and sig.get("op"):
        return sig.get("op"), sig.get("target")
    return None


class MlirReduction:
    def __init__(self, text: str, source_name: str, out: Path, options: MlirOptions, log=None, on_event=None):
        self.options = options
        self.source_name = source_name
        self.out = Path(out)
        self.log_lines: list[str] = []
        self._log_cb = log or (lambda line: None)
        self.on_event = on_event or (lambda e: None)
        self.stop = threading.Event()
        self.rep = mm.MlirModule()
        pipeline, module_text = mm.split(text)
        problem = mm.parse_error(module_text)
        if problem:
            raise ReducerError(f"{source_name}: not a valid MLIR module: {problem}", BAD_MLIR)
        self.original = self.rep.normalize(text)
        self.header = pipeline
        self.oracle_spec = oracles.make_oracle(options.oracle, options.platform)
        self.scratch = Path(tempfile.mkdtemp(prefix="reducer-mlir-"))
        self.sandbox = Sandbox(self.scratch / "runs", script_name=options.runner_name, platform=options.platform,
                               warm=True, warm_modules=("jax", "jax.extend.backend", "enzyme_ad.jax"))
        self.limits = Limits(timeout=options.timeout or 120.0)
        self.servers: mlir_run.ServerPool | None = None
        self.memo: dict[str, bool] = {}
        self.isolation = "subprocess"
        self.kind = ENZYME

    @classmethod
    def from_file(cls, path: Path, out: Path | None, options: MlirOptions, **kw) -> "MlirReduction":
        path = Path(path)
        text = read_module(path)
        return cls(text, path.name, out or Path.cwd() / f"reduced-{path.stem}", options, **kw)

    def log(self, line: str) -> None:
        self.log_lines.append(f"[{time.strftime('%H:%M:%S')}] {line}")
        self._log_cb(line)

    def close(self) -> None:
        if self.servers:
            self.servers.close()
        self.sandbox.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    # -- running candidates -----------------------------------------------------------------
    def _classify(self, run: RunResult) -> tuple[Oracle, Signature] | None:
        if self.oracle_spec is None:
            hit = oracles.detect(run, self.options.platform)
        else:
            sig = self.oracle_spec.classify(run)
            hit = (self.oracle_spec, sig) if sig else None
        if hit is None:
            return None
        sharp = mlir_run.WithDiagnostic(hit[0])
        return sharp, sharp.classify(run)

    def run_candidate(self, program: str, cancel: threading.Event | None = None, fresh: bool = False) -> RunResult:
        pipeline, module_text = mm.split(program)
        if self.isolation == "worker" and not fresh:
            return self.servers.run(self.kind, module_text, pipeline, self.limits.timeout)
        if self.isolation == "here" and not fresh:
            return mlir_run.run_here(self.kind, module_text, pipeline)
        return self.sandbox.run(mlir_run.runner_source(self.kind, module_text, pipeline, native_frames=True),
                                self.limits, cancel, fresh=fresh)

    def establish(self) -> tuple[Oracle, Signature, RunResult]:
        """Find how the module fails, from a first run in a subprocess, and how to run candidates."""
        _, module_text = mm.split(self.original)
        if self.header:
            attempts = [(ENZYME, self.header)]
        else:  # a module XLA cannot compile fails before any differentiation
            attempts = [(XLA, None), (ENZYME, default_pipeline(module_text))]
        if isinstance(self.oracle_spec, Script):
            self.kind, pipeline = attempts[0]
            self.original = mm.join(pipeline if self.kind == ENZYME else None, module_text)
            if not self.oracle_spec.interesting(self.original, "repro.mlir")[0]:
                raise ReducerError(f"{self.source_name}: the interestingness command rejects the original module",
                                   OTHER_FAILURE)
            self.isolation = "script"
            return self.oracle_spec, self.oracle_spec.signature(), RunResult(0, "", "", 0.0)
        if importlib.util.find_spec("enzyme_ad") is None:
            if self.header:
                raise ReducerError(f"{self.source_name}: running its Enzyme-JAX pipeline needs enzyme-ad "
                                   f"(pip install enzyme-ad)", OTHER_FAILURE)
            attempts = [a for a in attempts if a[0] != ENZYME]
        seen = []
        for kind, pipeline in attempts:
            self.kind = kind
            program = mm.join(pipeline if kind == ENZYME else None, module_text)
            run = self.run_candidate(program, fresh=True)
            hit = self._classify(run)
            seen.append((kind, run))
            if hit:
                self.original = program
                break
        else:
            run = seen[-1][1]
            if all(r.returncode == 0 for _, r in seen):
                tried = ["Enzyme-JAX's pipeline" if k == ENZYME else "XLA's compiler" for k, _ in seen]
                who = f"neither {tried[0]} nor {tried[1]} fails" if len(tried) == 2 else f"{tried[0]} does not fail"
                raise ReducerError(f"{self.source_name}: does not fail ({who} on it): nothing to reduce", NO_FAILURE)
            other = oracles.detect(run, self.options.platform)
            what = str(other[1]) if other else (run.output.strip().splitlines() or ["no output"])[-1][:200]
            raise ReducerError(f"{self.source_name}: fails, but not as --oracle {self.options.oracle} expects; "
                               f"saw: {what}", OTHER_FAILURE)
        oracle, sig = hit
        crashed = run.signal is not None or run.timed_out
        if crashed:
            self.isolation = "subprocess"
        else:
            self.isolation = self.options.isolation or "worker"
            if self.isolation == "worker":
                self.servers = mlir_run.ServerPool(
                    [mlir_run.Server(platform=self.options.platform) for _ in range(max(1, self.options.jobs))])
            again = self.run_candidate(self.original)
            if not oracle.judge(sig, again)[0]:
                self.log("in-process run differs from the subprocess run; candidates run in subprocesses")
                self.isolation = "subprocess"
        if self.options.timeout is None:
            self.limits = Limits(timeout=max(20.0, 4 * run.seconds))
        return oracle, sig, run

    def make_test(self, oracle: Oracle, wanted: Signature):
        aside: set = set()

        def test(program: str, cancel: threading.Event) -> bool:
            digest = hashlib.sha1(program.encode()).hexdigest()
            if digest in self.memo:
                return self.memo[digest]
            if self.stop.is_set() or cancel.is_set():
                return False
            if isinstance(oracle, Script):
                ok = oracle.interesting(program, "repro.mlir")[0]
            else:
                run = self.run_candidate(program, cancel)
                if run.cancelled:
                    return False
                ok, seen = oracle.judge(wanted, run)
                if not ok and seen is not None and seen != wanted and len(aside) < 5 and seen not in aside:
                    aside.add(seen)
                    self.log(f"met another failure (not followed): {seen}")
            self.memo[digest] = ok
            return ok

        return test

    def verify(self, program: str, oracle: Oracle, wanted: Signature) -> tuple[str, RunResult | None]:
        if isinstance(oracle, Script):
            ok = oracle.interesting(program, "repro.mlir")[0]
            return ("yes" if ok else "no: the interestingness command rejects it"), None
        n = self.options.verify_runs
        runs = [self.run_candidate(program, fresh=True) for _ in range(n)]
        verdicts = [oracle.judge(wanted, r) for r in runs]
        good = sum(1 for ok, _ in verdicts if ok)
        last = next((r for r, (ok, _) in zip(runs, verdicts) if ok), runs[-1])
        if good == n:
            return f"yes ({good}/{n} runs of the runner show the same signature)", last
        seen = {str(s) for ok, s in verdicts if not ok}
        return f"only {good}/{n} runs show the signature; saw {', '.join(seen) or 'no failure'}", last

    # -- the whole job ----------------------------------------------------------------------
    def _engine(self, rep, passes, test, stats: Stats, on_accept, deadline) -> Engine:
        engine = Engine(rep, passes, test, jobs=self.options.jobs if self.isolation != "here" else 1,
                        on_event=self.on_event, on_accept=on_accept, stop=self.stop, deadline=deadline)
        engine.stats = stats
        return engine

    def reduce(self, program: str, test, culprit, stats: Stats, deadline) -> str:
        """Pipeline passes, then module passes, again and again until neither shrinks. The pipeline
        goes first: it has few candidates, and each pass it loses makes every later run faster."""
        pipe_rep = pl.PipelineText()
        best_file = self.out / "best.mlir"
        while not self.stop.is_set() and not (deadline and time.monotonic() > deadline):
            before = program
            pipeline, module_text = mm.split(program)
            if pipeline:
                def pipeline_test(candidate: str, cancel, module_text=module_text) -> bool:
                    return test(mm.join(candidate, module_text), cancel)

                engine = self._engine(pipe_rep, pipeline_passes(), pipeline_test, stats,
                                      lambda best, m=module_text: write_atomic(best_file, mm.join(best, m)), deadline)
                program = mm.join(engine.reduce(pipeline), module_text)
            passes = mlir_passes(culprit)
            engine = self._engine(self.rep, passes, test, stats, lambda best: write_atomic(best_file, best), deadline)
            program = engine.reduce(program)
            for p in passes:
                if p.errors:
                    self.log(f"pass {p.name} stopped early {len(p.errors)} time(s): {p.errors[0][:200]}")
            pipeline = mm.split(program)[0]
            self.log(f"round: {self.rep.size(program)} operations, {pipe_rep.size(pipeline) if pipeline else 0} "
                     f"passes, {stats.tested} tested")
            if program == before:
                break
        return program

    def run(self) -> dict:
        start = time.monotonic()
        oracle, sig, first = self.establish()
        original = self.original
        pipeline0, module0 = mm.split(original)
        ops0 = self.rep.size(original)
        passes0 = pl.PipelineText().size(pipeline0) if pipeline0 else 0
        what = "Enzyme-JAX's pass pipeline" if self.kind == ENZYME else "XLA's compiler"
        self.log(f"reducing {self.source_name} ({ops0} operations" + (f", pipeline of {passes0} passes"
                                                                      if pipeline0 else "") + f"), output in {self.out}")
        where = {"worker": "in process, in a warm worker", "here": "in this process",
                 "subprocess": "in fresh subprocesses", "script": "through the interestingness command"}[self.isolation]
        self.log(f"failure: {sig} (in {what}; first run {first.seconds:.2f} s; candidates run {where})")
        info_box: dict = {}
        info_thread = None
        if self.options.full_outputs:
            info_thread = threading.Thread(target=lambda: info_box.update(envmod.collect(platform=self.options.platform)),
                                           daemon=True)
            info_thread.start()
        self.out.mkdir(parents=True, exist_ok=True)
        if self.options.full_outputs:
            write_atomic(self.out / "signature.json", sig.to_json() + "\n")
        deadline = start + self.options.max_time if self.options.max_time else None
        stats = Stats()
        test = self.make_test(oracle, sig)
        self.memo[hashlib.sha1(original.encode()).hexdigest()] = True
        reduce_start = time.monotonic()
        best = self.reduce(original, test, culprit_of(sig), stats, deadline)
        reduce_seconds = time.monotonic() - reduce_start
        interrupted = self.stop.is_set()
        pipeline, module_text = mm.split(best)
        ops1 = self.rep.size(best)
        passes1 = pl.PipelineText().size(pipeline) if pipeline else 0
        self.log(f"reduced to {ops1} operations ({', '.join(self.rep.ops(best))})"
                 + (f", pipeline of {passes1} passes: {pipeline}" if pipeline else "")
                 + f"; {stats.tested} tested in {reduce_seconds:.1f} s "
                 f"({stats.tested / reduce_seconds if reduce_seconds else 0:.1f} per second), "
                 f"{stats.accepted} accepted, {stats.cache_hits} cache hits")
        for name, counts in stats.per_pass.items():
            self.log(f"  pass {name}: {counts['tested']} tested, {counts['accepted']} accepted")
        verified, vrun = ("not run (interrupted)", first) if interrupted else self.verify(best, oracle, sig)
        self.log(f"verified: {verified}")
        if info_thread is not None:
            info_thread.join(timeout=150)
        info = info_box or ({"error": "environment probe did not finish"} if self.options.full_outputs else {})
        summary = mlir_emit.ModuleSummary(
            source_name=self.source_name, kind=self.kind, original_ops=ops0, final_ops=ops1,
            original_passes=passes0, final_passes=passes1, seconds=time.monotonic() - start, tested=stats.tested,
            accepted=stats.accepted, cache_hits=stats.cache_hits, verified=verified, interrupted=interrupted,
            isolation={"worker": ", in process in a warm worker", "here": ", in process",
                       "subprocess": ", each in a fresh subprocess"}.get(self.isolation, ""))
        excerpt = sig.excerpt
        if vrun is not None:
            seen = oracle.classify(vrun)
            excerpt = seen.excerpt if seen and seen.excerpt else excerpt
        runner_text = self.write_outputs(best, sig, excerpt, info, summary)
        return {"out": str(self.out), "signature": sig.to_dict(), "kind": self.kind,
                "original_ops": ops0, "final_ops": ops1, "original_passes": passes0, "final_passes": passes1,
                "ops": self.rep.ops(best), "module": mm.print_module(mm.parse_module(module_text)),
                "pipeline": pipeline, "opt_command": pl.opt_command(pipeline) if pipeline else None,
                "runner": self.options.runner_name, "runner_text": runner_text,
                "seconds": round(summary.seconds, 1), "reduce_seconds": round(reduce_seconds, 2),
                "tested": stats.tested, "accepted": stats.accepted, "cache_hits": stats.cache_hits,
                "per_second": round(stats.tested / reduce_seconds, 1) if reduce_seconds else 0.0,
                "isolation": self.isolation, "verified": verified, "interrupted": interrupted}

    def write_outputs(self, best: str, sig: Signature, excerpt: str, info: dict, summary) -> str:
        pipeline, module_text = mm.split(best)
        write_atomic(self.out / "repro.mlir", best)
        if pipeline:
            write_atomic(self.out / "pipeline.txt", pipeline + "\n")
        runner_text = mlir_emit.runner(module_text, pipeline, sig, info, summary, self.options.runner_name)
        write_atomic(self.out / self.options.runner_name, runner_text)
        if self.options.full_outputs:
            write_atomic(self.out / "report.md",
                         mlir_emit.report(module_text, pipeline, runner_text, sig, excerpt, info, summary,
                                          private_paths=(str(self.scratch),), runner_name=self.options.runner_name))
            write_atomic(self.out / "env.json", json.dumps(info, indent=2) + "\n")
            write_atomic(self.out / "reduce.log", "\n".join(self.log_lines) + "\n")
        try:
            (self.out / "best.mlir").unlink()
        except FileNotFoundError:
            pass
        return runner_text


# -- after a script reduction -----------------------------------------------------------------------
def dumped_module(sandbox: Sandbox, source: str, limits: Limits) -> str | None:
    """Run a script once and return the module Enzyme-JAX dumped when its pipeline failed."""
    run = sandbox.run(source, limits, fresh=True, keep=True)
    m = DUMPED.search(run.output)
    if not m:
        return None
    path = Path(m.group("path"))
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None
    finally:
        scratch = path.parent.parent
        if Path(sandbox.root).resolve() in scratch.resolve().parents:
            shutil.rmtree(scratch, ignore_errors=True)


def reduce_after_script(source: str, sandbox: Sandbox, limits: Limits, out: Path, log, budget: float = 120.0,
                        platform: str = "cpu", stop: threading.Event | None = None) -> dict | None:
    """Reduce the module Enzyme-JAX dumps for a (reduced) script into `out`: `repro.mlir`,
    `pipeline.txt` and the runner `repro_mlir.py`. Returns what the report shows, or None."""
    start = time.monotonic()
    text = dumped_module(sandbox, source, limits)
    if text is None:
        log("IR level: the reduced script left no Enzyme MLIR dump")
        return None
    options = MlirOptions(platform=platform, max_time=max(10.0, budget - (time.monotonic() - start)),
                          runner_name="repro_mlir.py", full_outputs=False)
    job = MlirReduction(text, "the Enzyme MLIR dump of repro.py", out, options, log=lambda line: log(f"IR level: {line}"))
    if stop is not None:
        job.stop = stop
    try:
        return job.run()
    finally:
        job.close()


# -- the command line -------------------------------------------------------------------------------
def cli_reduce(path: Path, out: Path | None, oracle: str, timeout: float | None, jobs: int, max_time: float | None,
               platform: str, quiet: bool, json_out: bool, fail) -> int:
    """`reducer reduce FILE.mlir`: returns the exit status; `fail(message, status)` reports bad input."""
    import signal
    import sys

    from reducer.errors import INTERRUPTED, USAGE

    def show(line: str) -> None:
        if not quiet and not json_out:
            print(line, file=sys.stderr, flush=True)

    pipeline_pass_names = {cls.name for cls in PIPELINE_PASSES}

    def event(e: Event) -> None:
        if json_out and e.kind == "accept":
            what = "passes" if e.pass_name in pipeline_pass_names else "operations"
            print(json.dumps({"event": "accept", "pass": e.pass_name, what: e.size,
                              "tested": e.stats.tested, "seconds": round(e.stats.seconds, 1)}),
                  file=sys.stderr, flush=True)

    options = MlirOptions(oracle=oracle, timeout=timeout, platform=platform, jobs=jobs, max_time=max_time)
    try:
        job = MlirReduction.from_file(path, out, options, log=show, on_event=event)
    except ReducerError as exc:
        return fail(str(exc), exc.status)
    except ValueError as exc:
        return fail(str(exc), USAGE)

    def interrupt(signum, frame):
        job.stop.set()
        job.sandbox.kill_all()

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        result = job.run()
    except ReducerError as exc:
        return fail(str(exc), exc.status)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        job.close()
    if json_out:
        print(json.dumps({k: v for k, v in result.items() if k not in ("module", "runner_text")}))
    elif not quiet:
        print(f"{result['original_ops']} -> {result['final_ops']} operations"
              + (f", pipeline {result['original_passes']} -> {result['final_passes']} passes"
                 if result["pipeline"] else "")
              + f" in {result['seconds']} s; verified: {result['verified']}\n"
              f"wrote {result['out']}/repro.mlir, {result['runner']} and report.md", file=sys.stderr)
    return INTERRUPTED if result["interrupted"] else 0
