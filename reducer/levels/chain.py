"""A job's chain of levels: the one path by which a script's job (jaxpr -> source, then IR) and a
module's job (IR) shrink what they established.

`ChainJob.shrink` runs each level of `levels()` in turn on the program the last one made (a level
says why it does not run with `why_not`), hands it a `LevelContext` (`context`) and takes its
`LevelResult` (`record_result`: its files written, its candidates' data files and a shorter stall handed
on); once the result is verified, `run_following_level` runs the first of `follow_levels()` that
applies (the IR level after a script), whose failures never cost the result: its judging is its own.

The levels stop where an estimate of the final checks' length says; when the checks leave time
(`checked`), the last level goes on from the verified result (`_go_on`) with what they measured kept
for them, and its result stands once verified in turn.

Every level keeps its best program so far through `on_accept` (`keep`), in its own form
(`best.py`, `best.jaxpr`, `best.mlir`), with `state.json` naming the level; `--resume` goes on
from that level (`resume_level`): the levels before it are skipped and it starts from the program
it kept (`LevelContext.resumed`).
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from reducer.established import EstablishedFailure
from reducer.job import Job
from reducer.levels.base import LevelContext, LevelResult


#: the least seconds of shrinking worth going on for, after the final checks
GO_ON_LEAST = 10.0


class ChainJob(Job):
    """A job that shrinks through a chain of levels; an input's job supplies `levels()`, and where
    it has them `follow_levels()`, `state(established)` (what --resume needs to know the failure again),
    `after_chain` and a richer `context`."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.made: list[tuple[object, LevelResult]] = []  # (level, what it made), in order
        self.counts: dict = {}  # each level's engine counts (`reducer.engine.Stats`), as it last kept its best
        self.previous: dict = {}  # the state of the interrupted run being resumed
        self.resume_at: str | None = None  # the level that run was in
        self.resumed: str | None = None  # and the best program it kept there
        self.verified: tuple | None = None  # (result, a run of it that showed the failure), going on from it

    # -- what the levels made -------------------------------------------------------------------
    @property
    def chain(self) -> list[LevelResult]:
        """What the levels made, in order."""
        return [result for _, result in self.made]

    @property
    def ended(self) -> tuple | None:
        """(level, its LevelResult): the last level that made a result."""
        return self.made[-1] if self.made else None

    @property
    def levels_run(self) -> list[str]:
        """The levels the result went through, for the report."""
        return list(dict.fromkeys(name for result in self.chain for name in result.levels))

    @property
    def stalled(self) -> bool:
        """Whether the last level stopped for want of a smaller candidate (--stall)."""
        return bool(self.made) and self.made[-1][1].stalled

    @property
    def stall(self) -> float | None:
        """The next level's --stall: shorter after a written-back script (`LevelResult.stall`)."""
        stalls = [s for s in (self.options.stall, *(result.stall for result in self.chain)) if s is not None]
        return min(stalls, default=None)

    # -- what an input's job supplies -----------------------------------------------------------
    def levels(self) -> tuple:
        """The chain, in order (`reducer.levels.base.Level`)."""
        return ()

    def follow_levels(self) -> tuple:
        """The levels that may follow the verified result."""
        return ()

    def state(self, established: EstablishedFailure) -> dict:
        """What --resume needs, besides the level, its best program and the counts."""
        return {"signature": established.signature.to_dict()}

    def after_chain(self, program: str, established: EstablishedFailure) -> str:
        """The program the final checks take, from the chain's last program."""
        return program

    # -- running the chain ----------------------------------------------------------------------
    def shrink(self, program: str, established: EstablishedFailure) -> str:
        """Chain the levels: each that runs starts from the program the last one made; none starts
        once the job is stopped."""
        for level in self.levels():
            if self.stop.is_set():
                break
            note = f"{level.name} level: not run (resuming the {self.resume_at} level)" if self.skipped(level) \
                else level.why_not(established, program)
            if note:
                self.log(note)
            result = None if note is not None else level.reduce(program, established, self.context(established, level))
            if result is not None:
                program, established = result.program, self.record_result(level, result, established)
        return self.after_chain(program, established)

    def skipped(self, level) -> bool:
        """Whether --resume skips `level`: it comes before the level the interrupted run was in."""
        names = [each.name for each in (*self.levels(), *self.follow_levels())]
        return self.resume_at in names and names.index(level.name) < names.index(self.resume_at)

    def resumed_level(self) -> tuple[object, int]:
        """The level the interrupted run was in (the chain's last for a state that names none), and
        its place: 0 for the chain's first, past the chain's own for a level that follows it."""
        every = (*self.levels(), *self.follow_levels())
        names = [each.name for each in every]
        place = names.index(self.resume_at) if self.resume_at in names else len(self.levels()) - 1
        return every[place], place

    def context(self, established: EstablishedFailure, level) -> LevelContext:
        """What `level` gets from this job: its best programs kept in its own form, and on --resume
        the one it kept before."""
        return dataclasses.replace(self.level_context(self.stall), levels=tuple(self.levels_run),
                                   on_accept=lambda best, stats: self.keep(level, best, established, stats),
                                   resumed=self.resumed if level.name == self.resume_at else None)

    def record_result(self, level, result: LevelResult, established: EstablishedFailure) -> EstablishedFailure:
        """`level`'s result: its files written, its candidates' data files and shorter stall handed on."""
        before = self.stall
        self.made.append((level, result))
        self.write_files(result.files)
        if result.data_files:
            data_files = established.data_files + result.data_files
            self.established = established = dataclasses.replace(established, data_files=data_files)
        if self.stall != before:
            self.log(f"{self.levels()[-1].name} level: from the written-back program, stopping after "
                     f"{result.stall:g} s without a smaller candidate")
        return established

    # -- the final checks, and the time they leave ---------------------------------------------------
    def checked(self, best: str, established: EstablishedFailure):
        """The result and its final checks' verdict. Shrinking stopped where an estimate of the checks'
        length said (under load it is off threefold either way); when they leave time, the last level
        goes on from the verified result (`_go_on`), and what it makes stands once its own final checks
        show the failure in every run (else the verified result does)."""
        began = time.monotonic()
        best, verdict = super().checked(best, established)
        self.checks_seconds = time.monotonic() - began
        while (more := self._go_on(best, established, verdict)) is not None:
            began = time.monotonic()
            _, again = super().checked(more, established)
            self.checks_seconds = time.monotonic() - began
            if not again.every:
                self.log(f"its result ({self.rep.size(more)} {self.unit}) is not verified ({again.text}): the "
                         f"verified result ({self.rep.size(best)} {self.unit}) stands")
                break
            best, verdict = more, again
        return best, verdict

    def _go_on(self, best: str, established: EstablishedFailure, verdict) -> str | None:
        """The last level's smaller result from the verified `best`, shrinking until the time left but
        what the final checks took (`Job.checks_seconds`, which the job's deadlines then keep for
        them); None where it does not go on: the checks were not all passed, the level reached its
        fixpoint or its stall (`LevelResult.cut`), too little time is left, or it made nothing smaller."""
        level, last = self.ended or (None, None)
        until = self.shrink_deadline(0.0)  # what the checks took, kept for them again
        spare = None if until is None else until - time.monotonic()
        final = last is not None and level.name == self.levels()[-1].name  # whose input is a result's form
        if not (verdict.every and final and last.cut and spare is not None and self.bug is None
                and not self.stop.is_set() and spare >= max(GO_ON_LEAST, self.checks_seconds)):
            return None
        self.verified = (best, verdict.run)
        size = self.rep.size(best)
        self.log(f"{level.name} level: going on from the verified result ({size} {self.unit}; {verdict.text}) for "
                 f"the {spare:.0f} s its final checks ({self.checks_seconds:.0f} s) left")
        result = level.reduce(best, established, dataclasses.replace(self.context(established, level), resumed=best))
        if result is None or self.stop.is_set():
            return None
        self.record_result(level, result, established)
        self.log(f"{level.name} level, going on: {size} -> {self.rep.size(result.program)} {self.unit}; "
                 f"{result.tested} tested, {result.accepted} accepted")
        return result.program if self.rep.size(result.program) < size else None

    def run_following_level(self, best: str, established: EstablishedFailure) -> LevelResult | None:
        """The first following level that applies, run on the verified result; an oracle's exception
        there stops that level only (it is logged, and the result stands)."""
        def judge(oracle, wanted, run):
            return oracle.judge(wanted, run)

        def check(program: str, wanted: EstablishedFailure, original: str, fresh_run):
            return self.verify(program, wanted, original, fresh_run, judge)

        for level in self.follow_levels():
            if not self.skipped(level) and level.applies(established, best):
                ctx = dataclasses.replace(self.context(established, level), judge=judge, verify=check)
                return level.reduce(best, established, ctx)
        return None

    # -- the best program so far and --resume ----------------------------------------------------
    def keep(self, level, best: str, established: EstablishedFailure, stats) -> None:
        """Keep `level`'s best program so far, in its own form, and what --resume needs (with the
        counts of the levels before it and its engine's, `stats`)."""
        self.counts[level.name] = stats
        before = self.previous
        counts = {key: before.get(key, 0) + sum(getattr(r, key) for r in self.chain) + getattr(stats, key)
                  for key in ("tested", "accepted")}
        seconds = before.get("seconds", 0.0) + time.monotonic() - self.started
        data = sorted({path.name for r in self.chain for path in r.data_files} | set(before.get("data", [])))
        own = {"tested": stats.tested, "accepted": stats.accepted}  # the running level's alone
        self.save_best(best, {**self.state(established), "level": level.name, "level_counts": own, **counts,
                              "seconds": seconds, "data": data}, level.suffix)

    def resume_level(self, state: dict, best: str) -> None:
        """Go on from where the interrupted run left off: the level it was in (its own program's
        level for a state that names none) and the best program it kept there."""
        self.previous, self.resumed = state, best
        self.resume_at = state.get("level") or self.levels()[-1].name

    def kept_data(self) -> tuple[Path, ...]:
        """The data files levels before the resumed one handed on, as the interrupted run wrote them out."""
        return tuple(self.out / name for name in self.previous.get("data", []) if (self.out / name).is_file())
