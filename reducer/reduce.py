"""One reduction of a script, from the first run to the files in the output folder.

`establish` runs the original (several times, to measure how reliably it fails) and fixes the
failure signature; `Reduction.run` drives the engine with the source passes, keeps other failures
aside, writes the best program so far after every step, verifies the result in fresh interpreters
and writes `repro.py`, `report.md`, `signature.json`, `env.json` and `reduce.log`.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import oracles
from oracles.base import Oracle, Signature, final_exception
from oracles.generic import Script
from reducer import emit, env as envmod
from reducer.engine import Engine, Event
from reducer.errors import NEEDS_INPUT, NO_BACKEND, NO_FAILURE, NO_RESUME, OTHER_FAILURE, ReducerError
from reducer.files import write_atomic
from reducer.inputs import data_files, read_script
from reducer.levels.source.passes import source_passes
from reducer.levels.source.representation import PythonSource
from reducer.workers.sandbox import Limits, RunResult, Sandbox
from reducer.timeouts import AdaptiveTimeout


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


@dataclass
class Options:
    oracle: str = "auto"
    timeout: float | None = None
    platform: str = "cpu"
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    runs: int = 3
    verify_runs: int = 3
    max_time: float | None = None
    stall: float | None = 600.0  # stop after this many seconds without progress
    memory_mb: int | None = None
    hangs: bool = False
    keep_aside: int = 5
    warm: bool = True
    reorder: bool = False  # passes in order of last round's yield (Engine.pass_order)
    runner: str = "trust"  # RUNNER_MODES: reuse one interpreter for candidates, and how far to trust it
    levels: str = "auto"  # "auto" or a comma list of: source, jaxpr (reducer.levels.jaxpr.level.parse_levels)


@dataclass
class Established:
    oracle: Oracle
    signature: Signature
    run: RunResult | None
    rate: float
    seconds: float


def _last_words(run: RunResult) -> str:
    ended = final_exception(run.output)
    if ended:
        return f"{ended[0]}: {ended[1]}"[:200]
    if run.timed_out:
        return "timed out"
    lines = [line for line in run.output.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else f"exit status {run.returncode}")[:200]


def no_backend(run: RunResult) -> str | None:
    """A reason when JAX could not start the requested backend (say, --platform gpu without a GPU)."""
    for line in run.output.splitlines():
        if "Unable to initialize backend" in line:
            return "JAX cannot start the requested backend: " + line.split("Unable to initialize backend", 1)[1].strip(" :")[:160]
    return None


def needs_input(run: RunResult) -> str | None:
    """A reason when the program failed because it wanted arguments or standard input."""
    ended = final_exception(run.output)
    text = run.output
    if "EOF when reading a line" in text or (ended and ended[0] == "EOFError"):
        return "the script reads standard input; give it its input inside the script"
    if "error: the following arguments are required" in text or (run.returncode == 2 and "usage:" in text):
        return "the script needs command-line arguments; give them defaults or set sys.argv inside the script"
    if ended and ended[0] == "IndexError" and "sys.argv" in text:
        return "the script reads sys.argv; give it its arguments inside the script"
    return None


def preload_modules(source: str) -> tuple[str, ...]:
    """Installed modules the script imports, for the warm workers to import once."""
    import ast
    import importlib.util

    names = ["numpy", "jax", "jax.numpy"]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    keep = []
    for name in dict.fromkeys(names):
        try:
            spec = importlib.util.find_spec(name.split(".")[0])
        except (ImportError, ValueError):
            continue
        origin = (spec.origin or "") if spec else ""
        if spec and ("site-packages" in origin or "dist-packages" in origin or spec.origin in ("built-in", "frozen")
                     or "/lib/python3" in origin):
            keep.append(name)
    return tuple(keep)


class Reduction:
    def __init__(self, script: Path, out: Path | None, options: Options, on_event=None, log=None,
                 resume: bool = False):
        self.script = Path(script)
        self.source = read_script(self.script)
        self.options = options
        self.out = Path(out) if out else Path.cwd() / f"reduced-{self.script.stem}"
        self.resume = resume
        self.on_event = on_event or (lambda e: None)
        self.log_lines: list[str] = []
        self.log_sink = log or (lambda line: None)
        self.stop = threading.Event()
        self.rep = PythonSource()
        self.scratch = Path(tempfile.mkdtemp(prefix="reducer-"))
        self.oracle_spec = oracles.make_oracle(options.oracle, options.platform, options.hangs)
        self.needs_gradients = self.oracle_spec is None or self.oracle_spec.needs_gradient_checks
        self.sandbox = Sandbox(self.scratch / "runs", script_name=self.script.name,
                               data_files=data_files(self.script, self.source), platform=options.platform,
                               check_gradients=self.needs_gradients, warm=options.warm,
                               warm_modules=preload_modules(self.source), reuse=options.runner != "off")
        self.memory_mb = options.memory_mb or default_memory_mb(options.jobs)
        self.limits = Limits(timeout=options.timeout or 300.0, memory_mb=self.memory_mb)
        self.aside: dict[Signature, int] = {}
        self.runaway = {"timed out": 0, "killed by a signal": 0, "out of memory": 0, "output cut": 0}
        self.aside_lock = threading.Lock()
        self.votes = 1
        self.timeout: AdaptiveTimeout | None = None  # set once the first runs are timed
        self.traced_counts = (0, 0)  # candidates tested and accepted at the jaxpr level
        self.unconfirmed = 0  # runner verdicts that a child of its own did not confirm

    # -- logging ----------------------------------------------------------------------------
    def log(self, line: str) -> None:
        stamped = f"[{time.strftime('%H:%M:%S')}] {line}"
        self.log_lines.append(stamped)
        self.log_sink(line)

    def close(self) -> None:
        self.sandbox.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    # -- the first runs ---------------------------------------------------------------------
    def establish(self, runs: int | None = None) -> Established:
        runs = runs or self.options.runs
        if isinstance(self.oracle_spec, Script):
            start = time.monotonic()
            ok, _ = self.oracle_spec.interesting(self.source, self.script.name)
            if not ok:
                raise ReducerError(f"{self.script}: the interestingness command rejects the original script",
                                   OTHER_FAILURE)
            return Established(self.oracle_spec, self.oracle_spec.signature(), None, 1.0, time.monotonic() - start)
        with ThreadPoolExecutor(max_workers=max(1, min(runs, self.options.jobs))) as pool:
            results = list(pool.map(lambda _: self.sandbox.run(self.source, self.limits), range(runs)))
        found = []
        for run in results:
            if self.oracle_spec is None:
                hit = oracles.detect(run, self.options.platform, self.options.hangs)
            else:
                sig = self.oracle_spec.classify(run)
                hit = (self.oracle_spec, sig) if sig else None
            found.append(hit)
        hits = [h for h in found if h]
        if not hits:
            run = results[0]
            reason = needs_input(run)
            if reason:
                raise ReducerError(f"{self.script}: {reason}", NEEDS_INPUT)
            reason = no_backend(run)
            if reason:
                raise ReducerError(f"{self.script}: {reason}", NO_BACKEND)
            if run.returncode == 0:
                raise ReducerError(f"{self.script}: does not fail: nothing to reduce", NO_FAILURE)
            if self.oracle_spec is not None:
                seen = oracles.detect(run, self.options.platform, self.options.hangs)
                what = str(seen[1]) if seen else _last_words(run)
                raise ReducerError(f"{self.script}: fails, but not as --oracle {self.options.oracle} expects; "
                                   f"saw: {what}", OTHER_FAILURE)
            raise ReducerError(f"{self.script}: fails with no recognised failure ({_last_words(run)}); "
                               f"use --oracle regex:PATTERN or script:COMMAND", OTHER_FAILURE)
        oracle, sig = hits[0]
        same = sum(1 for h in found if h and oracle.same(sig, h[1]))
        rate = same / len(results)
        slowest = max(r.seconds for r in results)
        if self.needs_gradients and not (oracle.needs_gradient_checks):
            self.sandbox.check_gradients = False
        if rate < 1.0:
            self.votes = max(3, runs)
        if self.options.timeout is None:
            self.limits = Limits(timeout=max(20.0, 4 * slowest), memory_mb=self.memory_mb)
        return Established(oracle, sig, results[found.index(hits[0])], rate, slowest)

    # -- testing candidates -----------------------------------------------------------------
    def _keep_aside(self, source: str, run: RunResult, seen: Signature) -> None:
        with self.aside_lock:
            if seen in self.aside or len(self.aside) >= self.options.keep_aside:
                return
            self.aside[seen] = n = len(self.aside) + 1
        write_atomic(self.out / "also-interesting" / f"{n:02d}-{seen.family}.py",
                     f"# Also fails, differently: {seen}\n" + source)
        self.log(f"kept aside another failure: {seen}")

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

    def make_test(self, est: Established):
        oracle, wanted = est.oracle, est.signature
        if self.options.timeout is None and not self.options.hangs and not isinstance(oracle, Script):
            self.timeout = AdaptiveTimeout(self.limits.timeout)

        def test(source: str, cancel: threading.Event) -> bool:
            if isinstance(oracle, Script):
                return oracle.interesting(source, self.script.name)[0]
            for _ in range(self.votes):
                if self.stop.is_set() or cancel.is_set():
                    return False
                run = self.sandbox.run(source, self.candidate_limits(), cancel)
                self._count_runaway(run)
                ok, seen = oracle.judge(wanted, run)
                if ok and run.reused and self.options.runner == "confirm":
                    run, (ok, seen) = self._confirm(source, run, oracle, wanted, cancel)
                if ok:
                    if self.timeout is not None:
                        self.timeout.record(run.seconds)
                    return True
                if run.cancelled:
                    return False
                if seen is None and not run.timed_out and run.returncode not in (0, None):
                    other = oracles.detect(run, self.options.platform)
                    seen = other[1] if other else None
                if seen is not None and seen != wanted:
                    self._keep_aside(source, run, seen)
                    return False
            return False

        return test

    def _confirm(self, source: str, run: RunResult, oracle, wanted: Signature, cancel: threading.Event):
        """An interesting verdict from the long-lived runner, checked in a child of its own: no
        earlier candidate can have left anything behind there."""
        again = self.sandbox.run(source, self.candidate_limits(), cancel, isolated=True)
        verdict = oracle.judge(wanted, again)
        if not verdict[0] and not again.cancelled:
            with self.aside_lock:
                self.unconfirmed += 1
            self.log(f"the runner's verdict did not hold in a child of its own (seen there: {verdict[1]})")
        return again, verdict

    def _holds(self, code: str, est: Established) -> bool:
        return est.oracle.judge(est.signature, self.sandbox.run(code, self.limits, isolated=True))[0]

    def _runner_misled(self, best: str, est: Established) -> bool:
        """Whether trusted runner verdicts led to a result that fails only after other candidates."""
        trusted = self.options.warm and self.sandbox.reuse and self.options.runner == "trust"
        return trusted and not isinstance(est.oracle, Script) and not self._holds(best, est)

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

    def verify(self, code: str, est: Established) -> tuple[str, RunResult | None]:
        if isinstance(est.oracle, Script):
            ok = est.oracle.interesting(code, self.script.name)[0]
            return ("yes" if ok else "no: the interestingness command rejects it"), None
        n = self.options.verify_runs
        runs = [self.sandbox.run(code, self.limits, fresh=True) for _ in range(n)]
        verdicts = [est.oracle.judge(est.signature, r) for r in runs]
        good = sum(1 for ok, _ in verdicts if ok)
        last_ok = next((r for r, (ok, _) in zip(runs, verdicts) if ok), runs[-1])
        if good == n:
            return f"yes ({good}/{n} runs show the same signature)", last_ok
        seen = {str(s) for ok, s in verdicts if not ok and s is not None} or {"no failure"}
        if good:
            return f"only {good}/{n} runs show the signature (nondeterministic); others: {', '.join(seen)}", last_ok
        # before concluding, ask whether the original still fails: lost by reduction, or gone for both
        again = self.sandbox.run(self.source, self.limits, fresh=True)
        if est.oracle.judge(est.signature, again)[0]:
            return (f"no: the failure was lost (0/{n} runs of the result show it, the original still does; "
                    f"saw {', '.join(seen)})"), last_ok
        return (f"no: nondeterministic (0/{n} runs of the result and a new run of the original show it; "
                f"saw {', '.join(seen)})"), last_ok

    # -- resuming ---------------------------------------------------------------------------
    def _state(self, est: Established, stats, previous: dict) -> dict:
        return {"script": str(self.script.resolve()), "script_sha1": hashlib.sha1(self.source.encode()).hexdigest(),
                "oracle": self.options.oracle if self.oracle_spec is not None else est.oracle.name,
                "platform": self.options.platform, "signature": est.signature.to_dict(),
                "timeout": self.limits.timeout, "votes": self.votes, "rate": est.rate,
                "tested": previous.get("tested", 0) + stats.tested, "accepted": previous.get("accepted", 0) + stats.accepted,
                "seconds": previous.get("seconds", 0.0) + stats.seconds}

    def load_resume(self) -> tuple[Established, str, dict]:
        """The interrupted run's oracle, signature and best program, checked to still fail."""
        try:
            state = json.loads((self.out / "state.json").read_text())
            best = (self.out / "best.py").read_text()
            wanted = Signature.from_dict(state["signature"])
        except (OSError, ValueError, KeyError) as exc:
            raise ReducerError(f"{self.out}: nothing to resume ({exc.__class__.__name__}: no readable state.json "
                               f"and best.py)", NO_RESUME) from None
        if state.get("script_sha1") != hashlib.sha1(self.source.encode()).hexdigest():
            raise ReducerError(f"{self.out}: was made from another version of {self.script.name}", NO_RESUME)
        oracle = oracles.make_oracle(state["oracle"], state.get("platform", "cpu"), self.options.hangs)
        self.limits = Limits(timeout=self.options.timeout or state.get("timeout", 120.0), memory_mb=self.memory_mb)
        self.votes = state.get("votes", 1)
        if not oracle.needs_gradient_checks:
            self.sandbox.check_gradients = False
        est = Established(oracle, wanted, None, state.get("rate", 1.0), 0.0)
        if not isinstance(oracle, Script):
            run = self.sandbox.run(best, self.limits)
            ok, seen = oracle.judge(wanted, run)
            if not ok:
                raise ReducerError(f"{self.out}/best.py no longer shows {wanted} (saw {seen or _last_words(run)})",
                                   NO_RESUME)
            est.run = run
        return est, best, state

    # -- the whole job ----------------------------------------------------------------------
    def run(self) -> dict:
        start = time.monotonic()
        previous: dict = {}
        if self.resume:
            est, original, previous = self.load_resume()
            self.log(f"resuming {self.out}: {self.rep.size(original)} tokens, {previous.get('tested', 0)} "
                     f"candidates tested before")
        else:
            est = self.establish()
            original = self.rep.normalize(self.source)
            self.log(f"reducing {self.script} ({self.rep.size(self.source)} tokens), output in {self.out}")
            self.log(f"failure: {est.signature} (seen in {est.rate:.0%} of {self.options.runs} runs, "
                     f"slowest {est.seconds:.1f} s; candidate timeout {self.limits.timeout:.0f} s)")
        info_box: dict = {}
        info_thread = threading.Thread(target=lambda: info_box.update(envmod.collect(platform=self.options.platform)),
                                       daemon=True)
        info_thread.start()
        self.out.mkdir(parents=True, exist_ok=True)
        write_atomic(self.out / "signature.json", est.signature.to_json() + "\n")
        from reducer.levels.jaxpr.level import traced_level  # the traced-program level, when chosen

        original = traced_level(self, original, est)
        deadline = start + self.options.max_time if self.options.max_time else None

        def on_event(event: Event) -> None:
            if event.kind == "accept":  # in the log file only: the progress display shows it live
                self.log_lines.append(f"[{time.strftime('%H:%M:%S')}] {event.size} tokens after "
                                      f"{event.stats.seconds:.0f} s ({event.pass_name})")
            self.on_event(event)

        passes = source_passes() if "source" in self.levels_run else []
        engine = Engine(self.rep, passes, self.make_test(est), jobs=self.options.jobs,
                        on_event=on_event, stop=self.stop, deadline=deadline, stall=self.options.stall,
                        reorder=self.options.reorder)

        accepted = [original]

        def save(best: str) -> None:
            accepted.append(best)
            write_atomic(self.out / "best.py", best)
            write_atomic(self.out / "state.json", json.dumps(self._state(est, engine.stats, previous), indent=1))

        engine.on_accept = save
        engine.cache[hashlib.sha1(original.encode()).hexdigest()] = True
        save(original)
        best = engine.reduce(original)
        interrupted = self.stop.is_set()
        if not interrupted and self._runner_misled(best, est):
            restart = self._last_that_holds(accepted, est)
            self.log(f"the result ({self.rep.size(best)} tokens) does not fail in a child of its own: an earlier "
                     f"candidate left something behind in the long-lived runner; going on from the last accepted "
                     f"program that does ({self.rep.size(restart)} tokens), with interesting verdicts confirmed")
            self.options.runner = "confirm"
            engine.cache = {}
            save(restart)
            best = engine.reduce(restart)
            interrupted = self.stop.is_set()
        stats = engine.stats
        if interrupted:
            save(best)
        self.log(f"reduced to {self.rep.size(best)} tokens: {stats.tested} tested, {stats.accepted} accepted, "
                 f"{stats.cache_hits} cache hits ({stats.hit_rate():.0%}), {stats.invalid} invalid, "
                 f"{stats.rounds} rounds")
        if engine.stalled:
            self.log(f"stopped early: no smaller candidate in {self.options.stall:.0f} s (--stall)")
        if any(self.runaway.values()):
            self.log("runaway candidates stopped: " + ", ".join(f"{n} {k}" for k, n in self.runaway.items() if n))
        if self.sandbox.reuse and self.options.warm and self.options.runner == "confirm":
            self.log(f"long-lived runner: {self.unconfirmed} interesting verdicts not confirmed in a child of their own")
        if self.timeout is not None:
            self.log(f"candidate timeout at the end: {self.timeout.value:.0f} s (adapted to the interesting runs)")
        for name, counts in stats.per_pass.items():
            self.log(f"  pass {name}: {counts['tested']} tested, {counts['accepted']} accepted")
        if interrupted:
            verified, vrun = "not run (interrupted)", est.run
        else:
            verified, vrun = self.verify(best, est)
        self.log(f"verified: {verified}")
        self.ir_level = None if interrupted else self.reduce_module(best, est)
        info_thread.join(timeout=150)
        info = info_box or {"error": "environment probe did not finish"}
        summary = emit.ReductionSummary(
            script_name=self.script.name, original_tokens=self.rep.size(self.source),
            final_tokens=self.rep.size(best), seconds=time.monotonic() - start + previous.get("seconds", 0.0),
            tested=stats.tested + previous.get("tested", 0) + self.traced_counts[0],
            accepted=stats.accepted + previous.get("accepted", 0) + self.traced_counts[1],
            cache_hits=stats.cache_hits, verified=verified, interrupted=interrupted,
            failure_rate=(f"{est.rate:.0%} of {self.options.runs} runs of the original; candidates accepted on "
                          f"any of {self.votes} runs" if est.rate < 1.0 else ""))
        summary.levels = list(self.levels_run)
        if self.ir_level:
            summary.levels.append("IR")
        excerpt = est.signature.excerpt
        if vrun is not None:
            seen = est.oracle.classify(vrun)
            excerpt = seen.excerpt if seen and seen.excerpt else excerpt
        self.write_outputs(best, est.signature, excerpt, info, summary, keep_state=interrupted)
        return {"out": str(self.out), "signature": est.signature.to_dict(), "original_tokens": summary.original_tokens,
                "final_tokens": summary.final_tokens, "seconds": round(summary.seconds, 1),
                "tested": summary.tested, "accepted": summary.accepted, "cache_hits": stats.cache_hits,
                "verified": verified, "interrupted": interrupted, "levels": summary.levels}

    def reduce_module(self, best: str, est: Established) -> dict | None:
        """After an Enzyme pipeline failure, reduce the module Enzyme dumps for the reduced script
        into the same folder (repro.mlir, pipeline.txt, repro_mlir.py); a failure there is only logged."""
        sig = est.signature
        if sig.family != "adjoint-missing" or sig.get("source") != "enzyme":
            return None
        try:
            from reducer.levels.mlir.level import reduce_after_script

            return reduce_after_script(best, self.sandbox, self.limits, self.out, self.log, budget=120.0,
                                       platform=self.options.platform, stop=self.stop)
        except Exception as exc:  # the script result must never be lost to the IR level
            self.log(f"IR level: not reduced ({type(exc).__name__}: {str(exc)[:200]})")
            return None

    def write_outputs(self, best: str, sig: Signature, excerpt: str, info: dict, summary,
                      keep_state: bool = False) -> None:
        private = (str(self.scratch), str(self.script.resolve().parent))
        write_atomic(self.out / "repro.py", emit.reproducer(best, sig, info, summary))
        ir = getattr(self, "ir_level", None)
        ir_args = {"mlir": ir["module"], "pipeline": ir["pipeline"], "mlir_runner": ir["runner"]} if ir else {}
        write_atomic(self.out / "report.md", emit.report(best, sig, excerpt, info, summary, private_paths=private,
                                                         **ir_args))
        write_atomic(self.out / "env.json", json.dumps(info, indent=2) + "\n")
        write_atomic(self.out / "reduce.log", "\n".join(self.log_lines) + "\n")
        if not keep_state:  # an interrupted run keeps what --resume needs
            for name in ("best.py", "state.json"):
                try:
                    (self.out / name).unlink()
                except FileNotFoundError:
                    pass
