"""One reduction job, whatever the level: what reducing a script and reducing an MLIR module share.

A level's job (`reducer.reduce.Reduction` for a script, `reducer.levels.mlir.level.MlirReduction`
for a module) says how to establish the failure, how to run a program in a fresh interpreter and
how to shrink it; `Job.run` chains them and owns the rest: the log, the stop event that Ctrl-C and
SIGTERM set, `--max-time` over the whole run (the final checks included), judging runs (an
exception raised by an oracle or a pass is a `ToolBug`, never a verdict), keeping other failures
aside in `also-interesting/`, verifying the result (and, when it does not fail, re-running the
original), the best program and state that `--resume` needs, the environment probe, and the exit
status.
"""
from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from oracles.base import Oracle, Signature
from oracles.outcome import RunResult
from reducer import env as envmod
from reducer.engine import ToolBug
from reducer.errors import INTERRUPTED, NO_RESUME, NOT_VERIFIED, TOOL_BUG, USAGE, ReducerError
from reducer.files import write_atomic
from reducer.established import Established, Options
from reducer.verdict import Verdict, last_words, own_output, verify_runs
from reducer.workers import scratch
from reducer.workers.command import CommandRunner, runner_for
from reducer.workers.sandbox import Limits

if TYPE_CHECKING:
    from reducer.levels.base import LevelResult

#: the share of --max-time kept for the final checks at most, and the least kept for them
CHECK_SHARE, CHECK_FLOOR = 0.3, 2.0
#: what starting a fresh interpreter (Python, jax, the harness) adds to a run, allowing for a loaded machine
FRESH_START = 5.0


class Job:
    """The shared half of a reduction; a level's job supplies `establish`, `begin`, `resume_from`,
    `shrink`, `fresh_run`, `finish(best, est, verdict, info, stopped, follow)` (its result dict with
    "files": name -> content, which the job writes) and, where it has them, `follow_levels`."""

    suffix = ".py"  # of the programs this level reduces
    unit = "tokens"  # what its sizes count
    file_name = "repro.py"  # what an oracle that runs candidates itself calls them

    def __init__(self, out: Path, options: Options, on_event=None, log=None, resume: bool = False,
                 scratch_prefix: str = "reducer-"):
        self.out = Path(out)
        self.options = options
        self.resume = resume
        self.on_event = on_event or (lambda e: None)
        self.log_sink = log or (lambda line: None)
        self.log_lines: list[str] = []
        self.stop = threading.Event()
        self.started = time.monotonic()
        self.deadline = self.started + options.max_time if options.max_time else None
        self.full_outputs = True  # report, signature, environment and log (not for a follow-up)
        self.bug: str | None = None  # what raised, when a bug of the tool stopped the job
        self.aside: dict[Signature, int] = {}
        self.aside_lock = threading.Lock()
        self.accepted: list[str] = []
        self.scratch = scratch.folder(scratch_prefix)
        self.sandbox = None
        self.helpers: list[Job] = []  # follow-up jobs that an interrupt must reach too
        self.first_limits = Limits()  # the first runs' limits; a level's job sets its own
        self.requested: Oracle | None = None  # the oracle --oracle asked for (None: auto); `est.oracle` is the one kept
        self.est: Established | None = None  # what establishing learned (set by `start` or `establish`)
        self.hand_back = False  # a follow-up's job hands its output files back instead of writing them
        self._info: dict = {}
        self._probe: threading.Thread | None = None

    # -- logging, closing, signals --------------------------------------------------------------
    def log(self, line: str) -> None:
        self.log_lines.append(f"[{time.strftime('%H:%M:%S')}] {line}")
        self.log_sink(line)

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
        scratch.remove(self.scratch)

    def interrupt(self, signum=None, frame=None) -> None:
        """Stop: no new candidate starts, and every running one is killed (a follow-up's too)."""
        self.stop.set()
        for job in [self, *self.helpers]:
            if job.sandbox is not None:
                job.sandbox.kill_all()

    def adopt(self, helper: "Job") -> None:
        """Run `helper` (a follow-up level's job) under this job's stop event and signals."""
        helper.stop = self.stop
        self.helpers.append(helper)

    @contextlib.contextmanager
    def signals(self):
        """Ctrl-C and SIGTERM stop the job (it then writes the best program so far)."""
        previous = {s: signal.signal(s, self.interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    # -- what establishing learned ---------------------------------------------------------------
    @property
    def limits(self) -> Limits:
        """The candidates' limits: as established, or the first runs' before."""
        return self.est.limits if self.est is not None and self.est.limits is not None else self.first_limits

    @property
    def oracle_spec(self) -> Oracle | None:
        """The oracle --oracle asked for (its name before `requested`)."""
        return self.requested

    @oracle_spec.setter
    def oracle_spec(self, oracle: Oracle | None) -> None:
        self.requested = oracle

    @property
    def command(self) -> CommandRunner | None:
        """Where candidates run when the user's interestingness command judges them (`--oracle
        script:COMMAND`): through that command, not the sandbox."""
        return runner_for(self.requested)

    @property
    def votes(self) -> int:
        """How many runs a candidate gets (more when the failure comes and goes)."""
        return self.est.votes if self.est is not None else 1

    def configure(self, est: Established) -> None:
        """Set the sandbox up for candidates as `est` says (gradient checks, watches, data files)."""
        box = self.sandbox
        if box is None:
            return
        if est.gradient_checks is not None:
            box.check_gradients = est.gradient_checks
        if est.watches:  # only the watch the verdicts rest on: the others cost every failing candidate
            box.extra_env["REDUCER_WATCHES"] = ",".join(est.watches)
            box.extra_env["REDUCER_WANTED_OPERATION"] = est.signature.get("op") or ""  # confirmed first by locate
        if est.data_files:
            box.data_files = tuple(est.data_files)

    def progress_info(self) -> tuple[int, str]:
        """What a progress display needs: the original's size and the unit sizes count."""
        return self.rep.size(self.original_program()), self.unit

    def level_context(self, stall: float | None = None):
        """What a level gets from this job (`reducer.levels.base.LevelContext`)."""
        from reducer.levels.base import LevelContext

        return LevelContext(judge=self.judge, keep_aside=self.keep_aside, stop=self.stop, started=self.started,
                            deadline=self.deadline, stall=stall, reorder=self.options.reorder,
                            jobs=self.options.jobs, log=self.log, on_event=self.on_event, sandbox=self.sandbox,
                            limits=self.limits, bounded=self.bounded, scratch=self.scratch,
                            platform=self.options.platform, adopt=self.adopt, out=self.out)

    def write_files(self, files: dict) -> None:
        """Write a level's output files (text or bytes) into the output folder."""
        for name, content in files.items():
            write_atomic(self.out / name, content)

    # -- time -----------------------------------------------------------------------------------
    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def bounded(self, timeout: float) -> float:
        """A run's timeout, cut so that the run ends before --max-time does."""
        left = self.remaining()
        return timeout if left is None else max(1.0, min(timeout, left))

    def shrink_deadline(self, run_seconds: float, rate: float = 1.0) -> float | None:
        """When shrinking must stop for the final checks (each about `run_seconds` long, up to --jobs
        at a time, as many as `verify_runs` asks for a failure seen in `rate` of runs) to fit in --max-time."""
        if self.deadline is None:
            return None
        rounds = -(-verify_runs(self.options.verify_runs, rate) // max(1, self.options.jobs))
        fresh = 1.5 * run_seconds + FRESH_START  # the checks start new interpreters; the first runs were warm
        reserve = min(CHECK_SHARE * self.options.max_time, max(CHECK_FLOOR, 1.2 * rounds * fresh + 2))
        return self.deadline - reserve

    # -- judging --------------------------------------------------------------------------------
    def judge(self, oracle: Oracle, wanted: Signature, run: RunResult) -> tuple[bool, Signature | None]:
        """`oracle.judge`; an exception inside the oracle is recorded as a bug of the tool that
        stops the job, and raised on (the engine stops on it too)."""
        try:
            return oracle.judge(wanted, run)
        except Exception as exc:
            self.tool_bug(f"the oracle {oracle.name}", exc)
            raise

    def tool_bug(self, where: str, exc: BaseException) -> None:
        """Record a bug of the tool (the first one, logged with its traceback once) and stop the job."""
        if self.bug is None:
            if isinstance(exc, ToolBug):
                self.bug, trace = str(exc).removeprefix("bug in reducer: "), exc.trace
            else:
                self.bug, trace = f"{where} raised {type(exc).__name__}: {str(exc)[:200]}", traceback.format_exc()
            self.log(f"bug in reducer: {self.bug}; stopped, keeping the best program so far\n{trace.rstrip()}")
        self.stop.set()

    def keep_aside(self, program: str, seen: Signature, suffix: str | None = None) -> None:
        """Keep the first few other failures met on the way in also-interesting/ (not followed);
        `suffix` names what a level's program is, when not the job's (`.jaxpr`)."""
        with self.aside_lock:
            if seen in self.aside or len(self.aside) >= self.options.keep_aside:
                return
            self.aside[seen] = n = len(self.aside) + 1
        comment = "//" if self.suffix == ".mlir" else "#"
        write_atomic(self.out / "also-interesting" / f"{n:02d}-{seen.family}{suffix or self.suffix}",
                     f"{comment} Also fails, differently: {seen}\n" + program)
        self.log(f"kept aside another failure: {seen}")

    # -- the final checks -----------------------------------------------------------------------
    def verify(self, program: str, est: Established, original: str) -> Verdict:
        """Run the result `verify_runs` times in fresh interpreters (more for a failure that comes and goes:
        enough that it shows in one of them but once in a hundred reductions); when none fails, run the
        original again to tell a failure lost by reduction from one that comes and goes. A run that
        --max-time cut short proves nothing either way."""
        if self.out_of_time():
            return Verdict("not run (--max-time reached first)", True, est.run)
        n = verify_runs(self.options.verify_runs, est.rate)
        with ThreadPoolExecutor(max_workers=max(1, min(n, self.options.jobs))) as pool:
            runs = list(pool.map(lambda _: self.fresh_run(program), range(n)))
        verdicts = [self.judge(est.oracle, est.signature, r) for r in runs]
        late = self.out_of_time()
        cut = sum(1 for r, (ok, _) in zip(runs, verdicts) if not ok and r.timed_out and late)
        good = sum(1 for ok, _ in verdicts if ok)
        run = next((r for r, (ok, _) in zip(runs, verdicts) if ok), est.run)
        if good == n - cut:
            if not cut:
                return Verdict(f"yes ({good}/{n} runs show the same signature)", True, run)
            others = f"; the {good} others show the same signature" if good else ""
            return Verdict(f"not finished within --max-time ({cut}/{n} runs cut short{others})", True, run)
        seen = ", ".join(dict.fromkeys(str(s) if s is not None else last_words(r) for r, (ok, s) in zip(runs, verdicts)
                                       if not ok))
        if good:
            return Verdict(f"only {good}/{n} runs show the signature (nondeterministic); others: {seen}", True, run)
        failing = next(r for r, (ok, _) in zip(runs, verdicts) if not ok and not (r.timed_out and late))
        if self.out_of_time():
            return Verdict(f"no: 0/{n} runs of the result show it; saw {seen} (no time left to run the original "
                           f"again)", False, failing)
        if self.judge(est.oracle, est.signature, self.fresh_run(original))[0]:
            return Verdict(f"no: the failure was lost (0/{n} runs of the result show it, the original still "
                           f"does; saw {seen})", False, failing)
        return Verdict(f"no: nondeterministic (0/{n} runs of the result and a new run of the original show it; "
                       f"saw {seen})", False, failing)

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline - 0.5

    def excerpt(self, est: Established, verdict: Verdict) -> str:
        """What the report's "What happens" shows: the reproducer's own output."""
        if verdict.run is None:
            return est.signature.excerpt
        if not verdict.ok:
            return own_output(verdict.run)
        seen = est.oracle.classify(verdict.run)
        return seen.excerpt if seen is not None and seen.excerpt else est.signature.excerpt

    # -- environment ----------------------------------------------------------------------------
    def start_env_probe(self) -> None:
        if self.full_outputs:
            probe = lambda: self._info.update(envmod.collect(platform=self.options.platform))  # noqa: E731
            self._probe = threading.Thread(target=probe, daemon=True)
            self._probe.start()

    def environment(self) -> dict:
        if self._probe is None:
            return {}
        self._probe.join(timeout=self.bounded(150.0))
        return dict(self._info) or {"error": "environment probe did not finish"}

    # -- the best program so far and resuming ---------------------------------------------------
    def save_best(self, program: str, state: dict) -> None:
        """Keep the best program so far, and (but for a follow-up in another job's folder) what
        --resume needs."""
        self.accepted.append(program)
        write_atomic(self.out / f"best{self.suffix}", program)
        if self.full_outputs:
            write_atomic(self.out / "state.json", json.dumps(state, indent=1))

    def read_state(self) -> tuple[dict, str, Signature]:
        """What an interrupted run left in --resume DIR: its state, best program and signature."""
        try:
            state = json.loads((self.out / "state.json").read_text())
            best = (self.out / f"best{self.suffix}").read_text()
            wanted = Signature.from_dict(state["signature"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ReducerError(f"{self.out}: nothing to resume ({exc.__class__.__name__}: no readable state.json "
                               f"and best{self.suffix})", NO_RESUME) from None
        return state, best, wanted

    def drop_state(self) -> None:
        for name in (f"best{self.suffix}", "state.json")[:2 if self.full_outputs else 1]:
            with contextlib.suppress(FileNotFoundError):
                (self.out / name).unlink()

    # -- the whole job --------------------------------------------------------------------------
    def run(self) -> dict:
        """Establish (or resume), shrink, verify, follow up, write the outputs; the result's
        "status" is the exit status."""
        est, program = self.start()
        self.out.mkdir(parents=True, exist_ok=True)
        if self.full_outputs:
            write_atomic(self.out / "signature.json", est.signature.to_json() + "\n")
        self.start_env_probe()
        try:
            best = self.shrink(program, est)
        except Exception as exc:  # whatever escapes a level's shrinking is a bug of the tool
            self.tool_bug("shrinking the program", exc)
            best = (self.accepted or [program])[-1]
        interrupted = self.stop.is_set() and self.bug is None
        if self.bug is not None:
            verdict = Verdict(f"not run (stopped by a bug in reducer: {self.bug})", True)
        elif interrupted:
            verdict = Verdict("not run (interrupted)", True, est.run)
        else:
            verdict = self.safely(lambda: self.verify(best, est, self.original_program()), est)
            if self.stop.is_set() and self.bug is None:  # Ctrl-C during the final checks
                interrupted, verdict = True, Verdict("not finished (interrupted)", True, est.run)
        self.log(f"verified: {verdict.text}")
        follow = None if self.stop.is_set() or not verdict.ok else self.follow_up(best, est)
        if follow is not None:
            self.write_files(follow.files)
        result = self.finish(best, est, verdict, self.environment(), interrupted or self.bug is not None, follow)
        files = result.pop("files", {})
        if self.hand_back:
            result["files"] = files
        else:
            self.write_files(files)
        if self.full_outputs:
            write_atomic(self.out / "env.json", json.dumps(self._info or {}, indent=2) + "\n")
            write_atomic(self.out / "reduce.log", "\n".join(self.log_lines) + "\n")
        if not self.stop.is_set():  # an interrupted run keeps what --resume needs
            self.drop_state()
        result.update(verified=verdict.text, interrupted=interrupted, status=self.status(verdict, interrupted))
        if self.bug is not None:
            result["bug"] = str(self.bug)
        return result

    def start(self) -> tuple[Established, str]:
        """The failure and the program to shrink: established anew, or read back for --resume."""
        try:
            started = self.resume_from() if self.resume else self.begin()
        except ReducerError:
            if self.stop.is_set():
                raise ReducerError("interrupted before the failure was established", INTERRUPTED) from None
            raise
        except ValueError as exc:  # an oracle's setting that fails on first use (a command that cannot run)
            raise ReducerError(str(exc), USAGE) from None
        except Exception as exc:
            self.tool_bug("establishing the failure", exc)
            raise ReducerError(f"bug in reducer: {self.bug}", TOOL_BUG) from exc
        if self.stop.is_set():  # the first runs were killed: what they showed is no failure of the program
            raise ReducerError("interrupted before the failure was established", INTERRUPTED)
        self.est = started[0]
        return started

    def safely(self, check, est: Established) -> Verdict:
        try:
            return check()
        except Exception as exc:
            self.tool_bug("the final check", exc)
            return Verdict(f"not run (stopped by a bug in reducer: {self.bug})", True)

    def status(self, verdict: Verdict, interrupted: bool) -> int:
        if self.bug is not None:
            return TOOL_BUG
        if interrupted:
            return INTERRUPTED
        return 0 if verdict.ok else NOT_VERIFIED

    def follow_levels(self) -> list:
        """The levels that may follow the verified result (`reducer.levels.base.Level`)."""
        return []

    def follow_up(self, best: str, est: Established) -> "LevelResult | None":
        """The first following level that applies, run on the result (the IR after a script)."""
        for level in self.follow_levels():
            if level.applies(est, best):
                return level.reduce(best, est, self.level_context())
        return None
