"""The one interface every level offers a job, and what a level hands back.

A `Level` enters from a program (a script, a module), shrinks its own representation of it with
its passes and its test, and exits to a program again, returning a `LevelResult`: it never reads
or writes the job's attributes. What it needs from the job comes in a `LevelContext`: judging runs
through `Job.judge` (an oracle's exception is a bug of the tool, never a verdict), keeping other
failures aside, the stop event, the deadline, the engine's stall and pass order, the number of
jobs, the log, progress events, the sandbox and limits candidates run under, keeping the best
program so far with what --resume needs (`on_accept`, in the level's own form: a script, a traced
program, a module) and, on --resume, the best program an interrupted run of the level kept
(`resumed`); for the level whose candidates are the job's own programs (the source level of a
script), the job's test, a second look at the result and when shrinking must stop. What the
failure is (oracle, signature, limits, votes …) comes in the frozen `reducer.established.EstablishedFailure`.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Protocol

from reducer.established import EstablishedFailure
from reducer.workers.sandbox import Limits, Sandbox


@dataclass(frozen=True)
class LevelResult:
    """What a level made: the program the next level starts from, its candidates tested and
    accepted, what the report says of it (`story`, `report`: keyword arguments of the report
    writer), the output files it leaves (name -> text or bytes), the levels whose result the
    program is (empty when the level's result was not kept), the data files the next level's
    candidates need beside them, and the most seconds the next level should go without a smaller
    candidate (None: its own --stall), whether the level itself stopped early for want of a
    smaller candidate (its --stall), whether it stopped at the end of its time short of both its
    fixpoint and its stall (`cut`: it may go on, given time), and its engine's cache hits and seconds
    spent shrinking."""

    program: str
    tested: int = 0
    accepted: int = 0
    story: str = ""
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    levels: tuple[str, ...] = ()
    data_files: tuple[Path, ...] = ()
    stall: float | None = None
    report: Mapping[str, object] = field(default_factory=dict)
    stalled: bool = False
    cut: bool = False
    cache_hits: int = 0
    seconds: float = 0.0
    #: what the level found at fault besides the program (the IR level: the search for XLA's culprit pass)
    culprit: Mapping[str, object] | None = None


@dataclass(frozen=True)
class LevelContext:
    """What a job gives a level: ways to judge and keep aside, when to stop, and how to run; keeping
    the best program so far and where an interrupted run left off (`on_accept`, `resumed`); the
    job's final check, for a level that checks a result of its own (`verify`); when shrinking must
    stop for the final checks to fit (`until`). What a job lends only the level whose candidates are
    its own programs (its test, its second look) that level is given when the job makes it
    (`reducer.levels.source.level.ScriptJob`)."""

    judge: Callable  # (oracle, wanted, run) -> (ok, seen): `Job.judge`
    keep_aside: Callable  # (program, seen, suffix, comment) -> None: `Job.keep_aside`
    stop: threading.Event
    started: float  # when the job started (time.monotonic)
    deadline: float | None  # when the whole job must end (--max-time), or None
    stall: float | None  # the engine's --stall
    reorder: bool  # the engine's --pass-order yield
    jobs: int
    log: Callable[[str], None]
    on_event: Callable  # the engine's progress events
    sandbox: Sandbox
    limits: Limits
    bounded: Callable[[float], float]  # a run's timeout, cut to end before --max-time
    scratch: Path  # the job's private folder
    platform: str
    adopt: Callable  # (sandbox) -> None: a level's own sandbox, whose running candidates an interrupt kills too
    out: Path  # the output folder
    levels: tuple[str, ...] = ()  # the levels before this one whose result the program handed to it is
    on_accept: Callable | None = None  # (program, counts) -> None: keep the best program so far (and --resume's state)
    resumed: str | None = None  # the best program an interrupted run of this level kept: go on from it (--resume)
    verify: Callable | None = None  # (program, established, original, fresh_run) -> Verdict: the job's final check
    #: when shrinking must stop for the final checks to fit (None: `deadline`); a callable when it
    #: moves (the final checks get shorter as the candidates do)
    until: float | Callable[[], float | None] | None = None


class Level(Protocol):
    """One level of reduction (`reducer.levels.jaxpr.level.JaxprLevel`,
    `reducer.levels.source.level.SourceLevel`, `reducer.levels.mlir.ir_level.IrLevel`), chained by
    `reducer.levels.chain.ChainJob`. `suffix` names the files of its programs (`best.jaxpr` …)."""

    name: str
    suffix: str

    def applies(self, established: EstablishedFailure, program: str) -> bool:
        """Whether this level runs on `program` for this failure."""

    def why_not(self, established: EstablishedFailure, program: str) -> str | None:
        """None when the level runs on `program`, else the log line saying why not ("": none)."""

    def reduce(self, program: str, established: EstablishedFailure, context: LevelContext) -> LevelResult | None:
        """Enter from `program`, shrink, exit to a program; None (and a log line saying why) when
        the level made nothing the next one can use."""
