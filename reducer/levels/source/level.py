"""The source level in a script's chain (`reducer.levels.base.Level`): the script's AST shrunk
directly by the source passes, each candidate a script run by the job.

`SourceLevel` runs on every script it is handed, last in the chain (after
`reducer.levels.jaxpr.level.JaxprLevel`): it drives the engine with `source_passes()` on the
`PythonSource` representation. Its candidates are the job's own programs, so the job of a script
lends it, when it makes the level (`ScriptJob`), its test of a candidate (`test_for`: the job's
oracle, votes, keep-aside, counterfactual and runner confirmation) and its second look at the result
(`restart`: the program to go on from when the verdicts that led to it cannot be trusted, the
outcome cache then forgotten). The rest reaches it through the `LevelContext`, as it reaches every
level: keeping the best program so far and what --resume needs (`on_accept`, with the engine's
counts; on --resume the job hands it the best script kept), the stall, the pass order, the number of
jobs and when shrinking must stop (`until`, else `deadline`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from reducer.engine import Engine, Problem
from reducer.established import EstablishedFailure
from reducer.levels.base import LevelContext, LevelResult
from reducer.levels.source.passes import source_passes
from reducer.levels.source.passes.original_calls import original_calls
from reducer.levels.source.representation import PythonSource
from reducer.levels.source.starts import starting_point


@dataclass(frozen=True)
class ScriptJob:
    """What the job of a script lends its source level: `test_for(established, program, confirm)`, the
    test of candidates (`(candidate, cancel) -> bool`; `confirm`: every interesting verdict of the
    long-lived runner confirmed in a child of its own), and `restart(established, best)`, the program
    to go on from, with verdicts confirmed, when the result cannot stand, or None."""

    test_for: Callable[[EstablishedFailure, str, bool], Callable]
    restart: Callable[[EstablishedFailure, str], str | None] = lambda established, best: None


class SourceLevel:
    """The source level: with the source passes when it is asked for (`chosen` None: auto, or
    naming "source") or no level before it kept its result; else the program is kept as it comes
    (the engine runs with no pass, so that the job still keeps and checks it)."""

    name, suffix = "source", ".py"

    def __init__(self, rep: PythonSource, job: ScriptJob, chosen: tuple[str, ...] | None = None, original: str = "",
                 file_name: str = "repro.py", passes: Callable[[], list] = source_passes):
        self.rep, self.job, self.chosen = rep, job, chosen  # the levels asked for (None: auto)
        self.original, self.file_name = original, file_name  # the user's script, and what a candidate is called
        self.passes = passes  # makes the passes, in order (`source_passes`)

    def why_not(self, established: EstablishedFailure, program: str) -> str | None:
        """None: the source level takes every script it is handed."""
        return None

    def applies(self, established: EstablishedFailure, program: str) -> bool:
        return self.why_not(established, program) is None

    def shrinks(self, before: tuple[str, ...]) -> bool:
        """Whether the source passes run, after the levels `before` kept their results."""
        return self.chosen is None or "source" in self.chosen or not before

    def reduce(self, program: str, established: EstablishedFailure, ctx: LevelContext) -> LevelResult:
        """Shrink `program` to a fixpoint of the source passes (again from the program `restart`
        gives, when it gives one); the result names "source" among its levels when the passes ran."""
        shrinks, resumed = self.shrinks(ctx.levels), ctx.resumed is not None
        program = ctx.resumed or program
        if "jaxpr" in ctx.levels:  # the program is a write-back: offer the user's own calls
            self.rep.original_calls = original_calls(self.original)
        keep = ctx.on_accept or (lambda best, counts: None)
        problem = Problem(self.rep, self.job.test_for(established, program, False), on_event=ctx.on_event,
                          on_accept=lambda best: keep(best, problem.stats), level="source")
        keep(program, problem.stats)
        self.rep.note_failure(program, established.run.output, self.file_name, ran=None if resumed else self.original)
        hold = None
        if shrinks and not resumed:
            program, hold = self._start(program, established, ctx, problem, keep)
        problem = dataclasses.replace(problem, test=held_to(hold, problem.test))
        engine = self._engine(problem, shrinks, ctx)
        best = engine.reduce(program)
        restart = None if ctx.stop.is_set() else self.job.restart(established, best)
        if restart is not None:  # from there on, with the runner's verdicts confirmed (the same cache and counts)
            problem.forget()
            keep(restart, problem.stats)
            problem = dataclasses.replace(problem, test=held_to(hold, self.job.test_for(established, restart, True)))
            engine = self._engine(problem, shrinks, ctx)
            best = engine.reduce(restart)
        if ctx.stop.is_set():
            keep(best, problem.stats)
        stats = problem.stats
        return LevelResult(best, stats.tested, stats.accepted, levels=("source",) if shrinks else (),
                           stalled=engine.stalled, cut=engine.cut, cache_hits=stats.cache_hits, seconds=stats.seconds)

    def _engine(self, problem: Problem, shrinks: bool, ctx: LevelContext) -> Engine:
        return Engine(problem, self.passes() if shrinks else [], jobs=ctx.jobs, stop=ctx.stop,
                      deadline=ctx.until if ctx.until is not None else ctx.deadline, stall=ctx.stall,
                      reorder=ctx.reorder)

    def _start(self, program: str, established: EstablishedFailure, ctx: LevelContext, problem: Problem,
               keep: Callable) -> tuple[str, Callable[[str], bool] | None]:
        """Where the passes start: the first start's proposal that shows the failure (`starts`), counted
        as a candidate the level tested, or `program` itself; and what candidates must keep from then
        on, as the start says (`must_keep`), or None."""
        # an instrumented run is slower than the program's: the limit of a candidate, four times over
        limits = dataclasses.replace(ctx.limits, timeout=ctx.bounded(4 * ctx.limits.timeout))
        run = lambda text: ctx.sandbox.run(text, limits, cancel=ctx.stop, fresh=True)  # noqa: E731

        def test(candidate: str, cancel) -> bool:
            problem.stats.tested += 1
            return problem.test(candidate, cancel)

        found = starting_point(program, established.signature, run, test, ctx.log, ctx.stop, self.rep.size)
        if found is None:
            return program, None
        start, made_by = found
        problem.stats.accepted += 1
        ctx.log(f"{made_by.name}: starting from {self.rep.size(start)} tokens (of {self.rep.size(program)})")
        keep(start, problem.stats)
        return start, getattr(made_by, "must_keep", lambda program: None)(start)


def held_to(hold: Callable[[str], bool] | None, test: Callable) -> Callable:
    """`test`, passing only candidates that keep what a start says they must (`hold`, where one does)."""
    if hold is None:
        return test
    return lambda candidate, cancel: hold(candidate) and test(candidate, cancel)
