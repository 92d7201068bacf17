"""The source level as a `Level` (`reducer.levels.source.level.SourceLevel`): its shape, and a chain
[jaxpr level (not applicable), source level] that gives what the engine with the source passes gave
when the job drove it itself. Fast: the test of a candidate is a function of its text."""
from __future__ import annotations

import inspect
import threading
import time
from pathlib import Path

import oracles
from oracles.outcome import RunResult, Signature
from reducer.engine import Engine, Problem
from reducer.established import EstablishedFailure
from reducer.levels.base import Level, LevelContext, LevelResult
from reducer.levels.jaxpr.level import JaxprLevel
from reducer.levels.source.level import ScriptJob, SourceLevel
from reducer.levels.source.passes import source_passes
from reducer.levels.source.representation import PythonSource
from reducer.workers.sandbox import Limits

SCRIPT = '''import jax.numpy as jnp


def helper(x):
    y = x + 1
    z = y * 2
    return z


def unused(q):
    return q - 1


a = jnp.ones(3)
b = helper(a)
c = jnp.sqrt(b)
print(c, unused(a))
raise ValueError("boom")
'''


def fails(candidate: str, cancel=None) -> bool:
    """The failure: the script still raises its error after computing `sqrt` of something."""
    return "raise ValueError(" in candidate and "boom" in candidate and "jnp.sqrt(" in candidate


def established() -> EstablishedFailure:
    sig = Signature("jax-error", (("type", "ValueError"),), "ValueError: boom")
    run = RunResult(1, "", 'Traceback (most recent call last):\nValueError: boom\n', 0.1)
    return EstablishedFailure(oracles.make_oracle("crash"), sig, run, 1.0, 0.1, limits=Limits(timeout=10.0))


def context(kept: list, events: list, levels: tuple[str, ...] = ()) -> LevelContext:
    return LevelContext(judge=lambda *a: (False, None), keep_aside=lambda *a: None, stop=threading.Event(),
                        started=time.monotonic(), deadline=None, stall=None, reorder=False, jobs=1,
                        log=lambda line: None, on_event=events.append, sandbox=None, limits=Limits(timeout=10.0),
                        bounded=lambda t: t, scratch=Path("/nonexistent"), platform="cpu", adopt=lambda job: None,
                        out=Path("/nonexistent"), levels=levels,
                        on_accept=lambda best, stats: kept.append((best, stats.tested)))


#: what the job of a script lends its source level: its test (here: fails as the script does)
JOB = ScriptJob(test_for=lambda established, program, confirm: fails)


def test_source_level_has_the_level_shape():
    level = SourceLevel(PythonSource(), JOB, None, SCRIPT)
    assert level.name == "source"
    for method in ("applies", "reduce"):  # called by position: the same arguments, in the same order
        wanted = [p.kind for p in inspect.signature(getattr(Level, method)).parameters.values()][1:]
        assert [p.kind for p in inspect.signature(getattr(level, method)).parameters.values()] == wanted, method
    assert len(inspect.signature(level.why_not).parameters) == len(inspect.signature(level.applies).parameters)
    est = established()
    assert level.why_not(est, SCRIPT) is None and level.applies(est, SCRIPT)
    assert level.shrinks(()) and not SourceLevel(PythonSource(), JOB, ("jaxpr",)).shrinks(("jaxpr",))
    assert SourceLevel(PythonSource(), JOB, ("jaxpr",)).shrinks(())  # nothing kept before it: it shrinks after all


def test_a_chain_with_the_jaxpr_level_left_out_gives_what_the_source_passes_give():
    est, rep = established(), PythonSource()
    program = rep.normalize(SCRIPT)
    assert fails(program)
    kept, events, results = [], [], []
    for level in (JaxprLevel(None, rep), SourceLevel(rep, JOB, None, SCRIPT, "repro.py")):
        if level.why_not(est, program) is not None:  # a flat script of a few tokens: "" (no line to log)
            assert level.name == "jaxpr" and level.why_not(est, program) == ""
            continue
        result = level.reduce(program, est, context(kept, events, tuple(n for r in results for n in r.levels)))
        results.append(result)
        program = result.program
    assert [r.levels for r in results] == [("source",)] and isinstance(results[0], LevelResult)

    before = PythonSource()  # what `Reduction.shrink` did itself: the engine, the source passes, the test
    problem = Problem(before, fails, level="source")
    before.note_failure(before.normalize(SCRIPT), est.run.output, "repro.py", ran=SCRIPT)
    expected = Engine(problem, source_passes(), jobs=1).reduce(before.normalize(SCRIPT))
    assert program == expected and fails(program) and rep.size(program) < rep.size(SCRIPT)
    assert (results[0].tested, results[0].accepted) == (problem.stats.tested, problem.stats.accepted)
    assert kept[0] == (rep.normalize(SCRIPT), 0) and kept[-1][0] == program  # the start, then each accepted one
    assert len(kept) == 1 + results[0].accepted and {e.level for e in events} == {"source"}
    assert not results[0].stalled


def test_with_only_the_jaxpr_level_asked_for_the_source_level_keeps_a_written_back_program():
    est, rep, kept = established(), PythonSource(), []
    program = rep.normalize(SCRIPT)
    result = SourceLevel(rep, JOB, ("jaxpr",), SCRIPT).reduce(program, est, context(kept, [], ("jaxpr",)))
    assert result.program == program and result.levels == () and result.tested == 0
    assert kept == [(program, 0)]
    assert rep.original_calls  # a write-back is offered the user's own calls (`original-calls`)


def test_a_restart_goes_on_from_the_program_the_job_gives_with_the_cache_forgotten():
    est, rep, kept, asked, made = established(), PythonSource(), [], [], []
    program = rep.normalize(SCRIPT)

    def restart(best):
        asked.append(best)
        return program if len(asked) == 1 else None

    def test_for(established, start, confirm):
        made.append((start, confirm))
        return fails

    job = ScriptJob(test_for=test_for, restart=lambda established, best: restart(best))
    result = SourceLevel(rep, job, None, SCRIPT).reduce(program, est, context(kept, []))
    assert len(asked) == 1  # asked once, after the first reduction
    assert program in [k for k, _ in kept[1:]]  # the restart's program kept before going on
    assert fails(result.program) and result.tested > 0
    assert made == [(program, False), (program, True)]  # a test of its own from there on: verdicts confirmed
