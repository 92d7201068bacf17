"""One reduction job, whatever the input: what reducing a script and reducing an MLIR module share.

An input's job (`reducer.reduce.Reduction` for a script, `reducer.levels.mlir.module_job.MlirReduction`
for a module) says how to establish the failure and how to run a program in a fresh interpreter;
its chain of levels (`reducer.levels.chain.ChainJob`) shrinks it. `Job.run` owns the rest: the log,
the stop event that Ctrl-C and SIGTERM set (reaching the sandboxes levels make of their own too),
`--max-time` over the whole run (the final checks included), judging runs (an exception raised by
an oracle or a pass is a `ToolBug`, never a verdict), keeping other failures aside in
`also-interesting/`, verifying the result (and, when it does not fail, re-running the original),
the best program and state that `--resume` needs (in the form of the level that was running:
`best.py`, `best.jaxpr`, `best.mlir`), the environment probe, and the exit status.
"""
from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from oracles.base import Oracle, Signature
from oracles.outcome import RunResult
from reducer import env as envmod
from reducer.engine import ToolBug
from reducer.errors import INTERRUPTED, NO_RESUME, NOT_VERIFIED, TOOL_BUG, USAGE, ReducerError
from reducer.files import write_atomic
from reducer.timeouts import FRESH_START, least_for_checks
from reducer.established import EstablishedFailure, Options
from reducer.verdict import Verdict, final_checks, own_output, verify_runs
from reducer.workers import scratch
from reducer.workers.command import CommandRunner, runner_for
from reducer.workers.sandbox import Limits

if TYPE_CHECKING:
    from reducer.levels.base import LevelResult

#: the share of --max-time kept for the final checks at most, and the least kept for them
CHECK_SHARE, CHECK_FLOOR = 0.3, 2.0


class Job:
    """The shared half of a reduction; an input's job supplies `establish`, `begin`, `resume_from`,
    `shrink`, `fresh_run`, `run_following_level(best, established)` (a following level's
    `LevelResult`, or None) and `finish(best, established, verdict, info, stopped, follow)` (its result
    dict with "files": name -> content, which the job writes)."""

    suffix = ".py"  # of the programs this level reduces
    comment = "#"  # what starts a comment line in them
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
        self.full_outputs = True  # report, signature, environment and log (a module's job may leave them out)
        self.bug: str | None = None  # what raised, when a bug of the tool stopped the job
        self.also_interesting: dict[Signature, int] = {}
        self.aside_lock = threading.Lock()
        self.accepted: list[str] = []
        self.kept: set[str] = set()  # the best programs' files kept for --resume
        self.scratch = scratch.folder(scratch_prefix)
        self.own_sandbox = None  # the sandbox the job made, as it made it (`sandbox` is what candidates run in)
        self.data = None  # the reproducer made standalone (reducer.data_literals.standalone), once shrunk
        # the latest run in a fresh interpreter that ran to its end: what a final check costs here
        self.fresh_seconds = 0.0
        self.checks_seconds: float | None = None  # how long the final checks took, once they ran
        self.adopted: list = []  # sandboxes of levels' own, whose candidates an interrupt kills too
        self.first_limits = Limits()  # the first runs' limits; a level's job sets its own
        # the oracle --oracle asked for (None: auto); `established.oracle` is the one kept
        self.requested: Oracle | None = None
        self.established: EstablishedFailure | None = None  # what establishing learned (set by `start` or `establish`)
        self._info: dict = {}
        self._probe: threading.Thread | None = None

    # -- logging, closing, signals --------------------------------------------------------------
    def log(self, line: str) -> None:
        self.log_lines.append(f"[{time.strftime('%H:%M:%S')}] {line}")
        self.log_sink(line)

    def close(self) -> None:
        if self.own_sandbox is not None:
            self.own_sandbox.close()
        scratch.remove(self.scratch)

    def interrupt(self, signum=None, frame=None) -> None:
        """Stop: no new candidate starts, and every running one is killed (a level's own sandbox's too)."""
        self.stop.set()
        for box in [self.sandbox, *self.adopted]:
            if box is not None:
                box.kill_all()

    def adopt(self, sandbox) -> None:
        """Let an interrupt kill the candidates running in `sandbox` (a level's own) too."""
        self.adopted.append(sandbox)

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
        kept = self.established.limits if self.established is not None else None
        return kept if kept is not None else self.first_limits

    @property
    def command(self) -> CommandRunner | None:
        """Where candidates run when the user's interestingness command judges them (`--oracle
        script:COMMAND`): through that command, not the sandbox."""
        return runner_for(self.requested)

    @property
    def votes(self) -> int:
        """How many runs a candidate gets (more when the failure comes and goes)."""
        return self.established.votes if self.established is not None else 1

    @property
    def sandbox(self):
        """The sandbox candidates run in: the job's own, set up as its established failure says (gradient
        checks, the watches its verdicts rest on, data files), with the files the standalone reproducer
        ran with once there is one; a new value whenever those change, never the job's own changed."""
        box, established = self.own_sandbox, self.established
        if box is None or established is None:
            return box
        changes: dict = {}
        if established.gradient_checks is not None:
            changes["check_gradients"] = established.gradient_checks
        if established.watches:  # only the watch the verdicts rest on: the others cost every failing candidate
            changes["extra_env"] = {**box.extra_env, "REDUCER_WATCHES": ",".join(established.watches),
                                    "REDUCER_WANTED_OPERATION": established.signature.get("op") or ""}
        if established.data_files:
            changes["data_files"] = tuple(established.data_files)
        if self.data is not None and self.data.files:
            changes["data_files"] = self.data.files
        return box.replace(**changes) if changes else box

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
                            platform=self.options.platform, adopt=self.adopt, out=self.out, verify=self.verify)

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
        if self.checks_seconds is not None:  # they ran once: what they took, not an estimate
            return self.deadline - max(CHECK_FLOOR, 1.2 * self.checks_seconds + 2)
        rounds = -(-verify_runs(self.options.verify_runs, rate) // max(1, self.options.jobs))
        # the checks start new interpreters; the first runs were warm. A fresh run measured on this
        # machine, as loaded as it is now, says what one costs better than the allowance. Too much
        # is kept rather than too little: what the checks leave is not lost (`ChainJob.checked`)
        fresh = max(2.0 * run_seconds + FRESH_START, self.fresh_seconds)
        least = max(CHECK_FLOOR, least_for_checks(self.options.max_time))
        reserve = min(CHECK_SHARE * self.options.max_time, max(least, 1.2 * rounds * fresh + 2))
        return self.deadline - reserve

    def timed_fresh(self, run: RunResult) -> RunResult:
        """`run`, a run in a fresh interpreter, kept as what a final check costs when it ran to its end."""
        if not (run.timed_out or run.cancelled):
            self.fresh_seconds = run.seconds
        return run

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

    def keep_aside(self, program: str, seen: Signature, suffix: str | None = None, comment: str | None = None) -> None:
        """Keep the first few other failures met on the way in also-interesting/ (not followed);
        `suffix` names what a level's program is, when not the job's (`.jaxpr`), and `comment` what
        starts a comment line in it, when not "#"."""
        with self.aside_lock:
            if seen in self.also_interesting or len(self.also_interesting) >= self.options.keep_aside:
                return
            self.also_interesting[seen] = n = len(self.also_interesting) + 1
        own = suffix in (None, self.suffix)
        suffix, comment = suffix or self.suffix, comment or (self.comment if own else "#")
        write_atomic(self.out / "also-interesting" / f"{n:02d}-{seen.family}{suffix}",
                     f"{comment} Also fails, differently: {seen}\n" + program)
        self.log(f"kept aside another failure: {seen}")

    # -- the final checks -----------------------------------------------------------------------
    def verify(self, program: str, established: EstablishedFailure, original: str, fresh_run=None,
               judge=None) -> Verdict:
        """`reducer.verdict.final_checks` of `program` (a level's own `fresh_run` and `judge`, for its own
        result; else the job's)."""
        return final_checks(self, program, established, original, fresh_run or self.fresh_run, judge or self.judge)

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline - 0.5

    def excerpt(self, established: EstablishedFailure, verdict: Verdict) -> str:
        """What the report's "What happens" shows: the reproducer's own output."""
        if verdict.run is None:
            return established.signature.excerpt
        if not verdict.ok:
            return own_output(verdict.run)
        seen = established.oracle.classify(verdict.run)
        return seen.excerpt if seen is not None and seen.excerpt else established.signature.excerpt

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
    def save_best(self, program: str, state: dict, suffix: str | None = None) -> None:
        """Keep the best program so far (`best` + `suffix`, the form of the level that made it: the
        job's own programs by default) and what --resume needs, which names that file and level."""
        suffix = suffix or self.suffix
        if suffix == self.suffix:
            self.accepted.append(program)
        self.kept.add(f"best{suffix}")
        write_atomic(self.out / f"best{suffix}", program)
        write_atomic(self.out / "state.json", json.dumps({**state, "best": f"best{suffix}"}, indent=1))

    def read_state(self) -> tuple[dict, str, Signature]:
        """What an interrupted run left in --resume DIR: its state, best program (in the form of the
        level that was running) and signature."""
        try:
            state = json.loads((self.out / "state.json").read_text())
            best = (self.out / Path(state.get("best", f"best{self.suffix}")).name).read_text()
            wanted = Signature.from_dict(state["signature"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ReducerError(f"{self.out}: nothing to resume ({exc.__class__.__name__}: no readable state.json "
                               f"and best program)", NO_RESUME) from None
        return state, best, wanted

    def drop_state(self) -> None:
        for path in {*self.out.glob("best.*"), *(self.out / name for name in self.kept), self.out / "state.json"}:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    # -- the whole job --------------------------------------------------------------------------
    def run(self) -> dict:
        """Establish (or resume), shrink, verify, follow up, write the outputs; the result's
        "status" is the exit status."""
        established, program = self.start()
        self.out.mkdir(parents=True, exist_ok=True)
        if self.full_outputs:
            write_atomic(self.out / "signature.json", established.signature.to_json() + "\n")
        self.start_env_probe()
        try:
            best = self.shrink(program, established)
        except Exception as exc:  # whatever escapes a level's shrinking is a bug of the tool
            self.tool_bug("shrinking the program", exc)
            best = (self.accepted or [program])[-1]
        interrupted = self.stop.is_set() and self.bug is None
        if self.bug is not None:
            verdict = Verdict(f"not run (stopped by a bug in reducer: {self.bug})", True)
        elif interrupted:
            verdict = Verdict("not run (interrupted)", True, established.run)
        else:
            best, verdict = self.checked(best, established)
            if self.stop.is_set() and self.bug is None:  # Ctrl-C during the final checks
                interrupted, verdict = True, Verdict("not finished (interrupted)", True, established.run)
        self.log(f"verified: {verdict.text}")
        follow = None if self.stop.is_set() or not verdict.ok else self.run_following_level(best, established)
        if self.stop.is_set() and not interrupted and self.bug is None:  # Ctrl-C in the level that followed
            interrupted = True
            self.log("interrupted in the level that follows the result; --resume goes on from there")
        if follow is not None:
            self.write_files(follow.files)
        stopped = interrupted or self.bug is not None
        result = self.finish(best, established, verdict, self.environment(), stopped, follow)
        self.write_files(result.pop("files", {}))
        if self.full_outputs:
            write_atomic(self.out / "env.json", json.dumps(self._info or {}, indent=2) + "\n")
            write_atomic(self.out / "reduce.log", "\n".join(self.log_lines) + "\n")
        if not self.stop.is_set():  # an interrupted run keeps what --resume needs
            self.drop_state()
        result.update(verified=verdict.text, interrupted=interrupted, status=self.status(verdict, interrupted))
        if self.bug is not None:
            result["bug"] = str(self.bug)
        return result

    def start(self) -> tuple[EstablishedFailure, str]:
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
            log = self.out / "reduce.log"
            write_atomic(log, "\n".join(self.log_lines) + "\n")
            raise ReducerError(f"bug in reducer: {self.bug} (traceback in {log})", TOOL_BUG) from exc
        if self.stop.is_set():  # the first runs were killed: what they showed is no failure of the program
            raise ReducerError("interrupted before the failure was established", INTERRUPTED)
        self.established = started[0]
        return started

    def checked(self, best: str, established: EstablishedFailure) -> tuple[str, Verdict]:
        """The result and its final checks' verdict (a chain's last level may go on from it)."""
        return best, self.safely(lambda: self.verify(best, established, self.original_program()), established)

    def safely(self, check, established: EstablishedFailure) -> Verdict:
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

    def run_following_level(self, best: str, established: EstablishedFailure) -> "LevelResult | None":
        """What a level that follows the verified result made (the IR after a script), or None."""
        return None
