"""The generic driver, with in-process predicates instead of processes: the problem it owns, the
pass contract (parsed items, change points, resuming), and bugs of the tool."""
import threading
import time

import pytest

from reducer.engine import Chunk, Chunks, Engine, Problem, ToolBug, chunk_order, layout, proposals
from reducer.levels.source.passes import source_passes
from reducer.levels.source.passes.delete_statements import DeleteStatements
from reducer.levels.source.representation import PythonSource, Script


def reduce(src, pred, jobs=1, passes=None):
    rep = PythonSource()
    calls = []

    def test(cand, cancel):
        calls.append(cand)
        return pred(cand)

    engine = Engine(Problem(rep, test), passes or source_passes(), jobs=jobs)
    return engine.reduce(rep.normalize(src)), engine, calls


PROGRAM = '''
import jax
import jax.numpy as jnp

def helper(a, b):
    return a * b + 1

def loss(params, x):
    h = jnp.tanh(x @ params["w"])
    h = jax.lax.top_k(h, 2)[0]
    return jnp.mean(helper(h, 3.0) ** 2)

if __name__ == "__main__":
    params = {"w": jnp.ones((4, 5)), "b": jnp.zeros(5)}
    x = jnp.ones((3, 4))
    for step in range(10):
        print(step, jax.grad(loss)(params, x))
'''


def test_reduces_to_what_the_predicate_needs():
    best, engine, _ = reduce(PROGRAM, lambda c: "top_k" in c and "grad" in c)
    assert "top_k" in best and "grad" in best
    assert PythonSource().size(best) <= 12, best
    assert engine.stats.accepted > 0


def test_parallel_jobs_reach_the_same_result():
    pred = lambda c: "top_k" in c and "tanh" in c
    one, _, _ = reduce(PROGRAM, pred, jobs=1)
    four, _, _ = reduce(PROGRAM, pred, jobs=4)
    assert one == four


def test_cache_avoids_retesting_the_same_candidate():
    _, engine, calls = reduce(PROGRAM, lambda c: "top_k" in c)
    assert len(calls) == len(set(calls))
    assert engine.stats.tested == len(calls)
    # the same pass twice, nothing interesting: the second proposes only candidates already judged
    _, engine, calls = reduce(PROGRAM, lambda c: False, passes=[DeleteStatements(), DeleteStatements()])
    assert len(calls) == len(set(calls)) == engine.stats.tested > 0
    assert engine.stats.cache_hits == engine.stats.tested + engine.stats.invalid


def test_only_smaller_candidates_are_tested():
    rep = PythonSource()
    sizes = []
    reduce(PROGRAM, lambda c: sizes.append(rep.size(c)) or "jnp.mean" in c)
    assert all(s < rep.size(rep.normalize(PROGRAM)) for s in sizes)


def test_stop_returns_best_so_far():
    stop = threading.Event()
    rep = PythonSource()
    seen = []

    def test(cand, cancel):
        seen.append(cand)
        if len(seen) == 3:
            stop.set()
        return True

    engine = Engine(Problem(rep, test), [DeleteStatements()], stop=stop)
    src = rep.normalize(PROGRAM)
    best = engine.reduce(src)
    assert len(seen) <= 3 and rep.size(best) <= rep.size(src)


def test_uninteresting_everything_keeps_the_original():
    src = PythonSource().normalize(PROGRAM)
    best, engine, _ = reduce(PROGRAM, lambda c: False)
    assert best == src and engine.stats.accepted == 0


def test_stall_budget_stops_a_reduction_that_finds_nothing():
    rep = PythonSource()
    calls = []

    def test(cand, cancel):
        calls.append(cand)
        time.sleep(0.02)
        return False

    engine = Engine(Problem(rep, test), source_passes(), stall=0.3)
    start = time.monotonic()
    assert engine.reduce(rep.normalize(PROGRAM)) == rep.normalize(PROGRAM)
    assert engine.stalled and time.monotonic() - start < 60  # far less than testing every candidate
    full = Engine(Problem(rep, lambda c, e: False), source_passes())
    full.reduce(rep.normalize(PROGRAM))
    assert len(calls) < full.stats.tested  # without the budget every candidate is tried


class Named:
    """A pass in the text form of the contract: it proposes what `propose(program)` returns."""

    def __init__(self, name, propose):
        self.name, self.propose = name, propose

    def candidates(self, program):
        yield from self.propose(program)


def test_the_traced_level_stops_when_it_stops_shrinking_not_at_its_whole_share():
    """A fifth of its budget without a smaller candidate hands the time on (at least 10 s), and the
    user's --stall, when shorter, still decides."""
    from reducer.levels.jaxpr.level import STALL_FLOOR, STALL_RUNS, progress_stall

    assert progress_stall(None, 90.0) == 18.0 and progress_stall(600.0, 90.0) == 18.0
    assert progress_stall(5.0, 90.0) == 5.0 and progress_stall(None, 20.0) == STALL_FLOOR
    assert progress_stall(None, 90.0, run_seconds=11.0) == STALL_RUNS * 11.0  # a loaded machine: runs, not seconds


def test_passes_that_cut_most_per_candidate_go_first_in_later_rounds():
    rep = PythonSource()
    order = []
    # "tiny" drops one leading `a` statement per candidate, "big" halves the program
    tiny = Named("tiny", lambda prog: [prog.split("\n", 1)[1]] if prog.startswith("a") else [])
    big = Named("big", lambda prog: ["\n".join(prog.splitlines()[: len(prog.splitlines()) // 2]) + "\n"]
                if prog.count("\n") > 1 else [])
    program = "".join(f"a{i} = {i}\n" for i in range(3)) + "".join(f"x{i} = {i}\n" for i in range(40))
    problem = Problem(rep, lambda cand, cancel: True, on_event=lambda e: e.kind == "pass" and order.append(e.pass_name))
    engine = Engine(problem, [tiny, big], reorder=True)
    assert engine.reduce(program) == "x0 = 0\n"
    assert order[:2] == ["tiny", "big"]
    assert order[2:4] == ["big", "tiny"]
    fixed = Engine(Problem(rep, lambda cand, cancel: True), [tiny, big])
    fixed.reduce(program)
    assert [p.name for p in fixed.pass_order()] == ["tiny", "big"]


# -- the problem: one cache, one count, one set of callbacks for a whole level run -------------------
def test_the_problem_keeps_cache_and_counts_across_engines():
    rep = PythonSource()
    calls, accepted, events = [], [], []
    problem = Problem(rep, lambda c, cancel: calls.append(c) or False, on_accept=accepted.append,
                      on_event=events.append, level="source")
    src = rep.normalize(PROGRAM)
    Engine(problem, [DeleteStatements()]).reduce(src)
    tested = len(calls)
    assert tested > 0 and problem.stats.tested == tested
    Engine(problem, [DeleteStatements()]).reduce(src)  # a second round of the same level: nothing retested
    assert len(calls) == tested and problem.stats.cache_hits >= tested
    assert {e.level for e in events} == {"source"} and not accepted


def test_a_part_of_the_program_is_tested_cached_and_saved_as_the_whole():
    """As the IR level reduces a module's pipeline: candidates for the part stand for whole programs."""
    seen, saved = [], []
    whole = lambda part: f"pipeline {part}\nmodule"

    def test(program, cancel):
        seen.append(program)
        return "b" in program.splitlines()[0]

    problem = Problem(PythonSource(), test, on_accept=saved.append, level="IR")
    part = problem.part(PythonSource(), whole, "pipeline")
    shorter = Named("shorter", lambda p: [p[:k] + p[k + 1:] for k in range(len(p))])
    assert Engine(part, [shorter]).reduce("a + b") == "b"
    assert all(s.startswith("pipeline ") and s.endswith("\nmodule") for s in seen)
    assert saved[-1] == whole("b") and problem.stats.accepted == part.stats.accepted > 0
    assert part.digest("b") == problem.digest(whole("b")) and problem.cache[problem.digest(whole("b"))] is True


# -- the pass contract: parsed items, change points, resuming ----------------------------------------
class Counted(PythonSource):
    def __init__(self):
        self.parsed = 0

    def parse(self, source):
        self.parsed += 1
        return super().parse(source)


class DropLines:
    """Drops one top-level statement per point; counts what the driver asks of it."""

    name = "drop-lines"

    def __init__(self):
        self.items, self.applied, self.listed = [], [], 0

    def points(self, script):
        self.items.append(script)
        self.listed += 1
        return list(range(len(script.tree.body)))

    def apply(self, script, i):
        self.applied.append((script.text, i))
        lines = script.text.splitlines(keepends=True)
        return "".join(lines[:i] + lines[i + 1:])


def test_passes_get_the_parsed_best_once_per_accepted_program():
    rep = Counted()
    a, b = DropLines(), DropLines()
    b.name = "drop-lines-again"
    program = "".join(f"x{i} = {i}\n" for i in range(6))
    problem = Problem(rep, lambda c, cancel: "x3" in c)
    assert Engine(problem, [a, b]).reduce(program) == "x3 = 3\n"
    assert all(isinstance(item, Script) for item in a.items + b.items)
    assert rep.parsed == problem.stats.accepted + 1  # the original, then each accepted candidate
    assert b.items[0] is a.items[-1]  # the same item, shared by the passes


def test_a_resumed_pass_makes_no_candidate_before_its_position():
    p = DropLines()
    program = "".join(f"x{i} = {i}\n" for i in range(8))
    keep = {"x0", "x2", "x4", "x6"}
    best = Engine(Problem(PythonSource(), lambda c, cancel: all(k in c for k in keep)), [p]).reduce(program)
    assert best == "x0 = 0\nx2 = 2\nx4 = 4\nx6 = 6\n"
    # each program is asked for candidates from the accepted position on, never from its start again
    positions = {}
    for text, i in p.applied:
        positions.setdefault(text, []).append(i)
    resumed = [ps for ps in positions.values() if ps[0] > 0]
    assert resumed and all(ps == sorted(set(ps)) for ps in positions.values())
    assert len(p.applied) == sum(len(ps) for ps in positions.values()) <= 8 + 2 * 4


def test_chunks_are_laid_out_by_the_driver_whole_then_halves_then_single_items():
    assert list(chunk_order(4)) == [(0, 4), (0, 2), (2, 4), (0, 1), (1, 2), (2, 3), (3, 4)]
    assert list(chunk_order(3, from_end=True)) == [(0, 3), (2, 3), (1, 2), (0, 1)]
    assert layout(["a", Chunks("w", 2), "b"]) == ["a", Chunk("w", 0, 2), Chunk("w", 0, 1), Chunk("w", 1, 2), "b"]
    assert list(chunk_order(0)) == []


def test_a_pass_in_the_text_form_is_still_resumed_at_its_position():
    def propose(program):
        for k in range(program.count("\n")):
            lines = program.splitlines(keepends=True)
            yield "".join(lines[:k] + lines[k + 1:])

    program = "".join(f"x{i} = {i}\n" for i in range(5))
    best = Engine(Problem(PythonSource(), lambda c, cancel: "x4" in c), [Named("text", propose)]).reduce(program)
    assert best == "x4 = 4\n"


# -- bugs of the tool ------------------------------------------------------------------------------
class Broken:
    name = "broken"

    def points(self, script):
        return [0, 1]

    def apply(self, script, point):
        if point == 1:
            raise KeyError("no such node")
        return "x = 1\n"


def test_a_pass_that_raises_stops_the_reduction_with_a_tool_bug():
    program = "x = 1\ny = 2\n"
    with pytest.raises(ToolBug) as info:
        Engine(Problem(PythonSource(), lambda c, cancel: False), [Broken()]).reduce(program)
    bug = info.value
    assert bug.pass_name == "broken" and bug.best == program and bug.during == "pass"
    assert "KeyError: 'no such node'" in bug.trace and "in apply" in bug.trace
    assert "bug in reducer" in str(bug) and "broken" in str(bug)


def test_a_test_that_raises_is_a_tool_bug_not_an_uninteresting_candidate():
    program = "x = 1\ny = 2\nz = 3\n"
    calls = []

    def test(candidate, cancel):
        calls.append(candidate)
        if len(calls) == 2:
            raise ZeroDivisionError("division by zero")
        return len(calls) == 1  # the first candidate is accepted, the second test fails

    with pytest.raises(ToolBug) as info:
        Engine(Problem(PythonSource(), test), [DropLines()]).reduce(program)
    bug = info.value
    assert bug.during == "test" and bug.pass_name == "drop-lines"
    assert "ZeroDivisionError" in bug.trace and bug.best == "y = 2\nz = 3\n"


# -- every level's progress reaches the display ------------------------------------------------------
@pytest.mark.slow
def test_the_traced_level_reports_progress_to_the_callback(tmp_path):
    """The jaxpr level used to run its engine without a progress callback: the display stood still."""
    import oracles
    from conftest import PROGRAMS
    from reducer.levels.jaxpr.level import reduce_traced
    from reducer.workers.sandbox import Limits, Sandbox

    source = (PROGRAMS / "while_loop_grad.py").read_text()
    sandbox = Sandbox(tmp_path / "runs", script_name="while_loop_grad.py")
    limits = Limits(timeout=60)
    events, stop = [], threading.Event()

    def on_event(event):
        events.append(event)
        if event.kind == "test":
            stop.set()  # one candidate is enough to see the events arrive

    try:
        oracle, sig = oracles.detect(sandbox.run(source, limits, fresh=True))
        reduce_traced(source, sandbox, limits, oracle, sig, lambda line: None, budget=60, jobs=1, stop=stop,
                      verify_runs=1, on_event=on_event)
    finally:
        sandbox.close()
    kinds = {e.kind for e in events}
    assert {"round", "pass", "test"} <= kinds and {e.level for e in events} == {"jaxpr"}
    assert events[-1].stats.tested >= 1


def test_an_ir_pass_that_meets_a_module_it_cannot_handle_stops_and_says_so_once():
    """The IR passes keep tolerating binding errors on odd modules, but no longer silently."""
    from reducer.levels.mlir.passes import Guarded

    class Odd:
        name = "odd"

        def points(self, item):
            return [1, 2]

        def apply(self, item, point):
            if point == 2:
                raise ValueError("Unable to cast Python instance to C++ type")
            return item + "1"

    lines = []
    guarded = Guarded(Odd(), log=lines.append)
    assert list(proposals(guarded, "x")) == ["x1"] and list(proposals(guarded, "y")) == ["y1"]
    assert len(guarded.errors) == 2 and len(lines) == 1
    assert lines[0].startswith("pass odd stopped on this module: ValueError: Unable to cast")
    assert "test_engine.py:" in lines[0]


def test_a_candidate_still_running_at_the_deadline_is_cancelled_not_waited_for():
    rep = PythonSource()
    cancelled = []

    def test(cand, cancel):  # a slow run, as on a loaded machine: it ends early only when cancelled
        if cancel.wait(timeout=30):
            cancelled.append(cand)
        return True

    deadline = time.monotonic() + 0.5
    engine = Engine(Problem(rep, test), [DeleteStatements()], jobs=2, deadline=deadline)
    start = time.monotonic()
    src = rep.normalize(PROGRAM)
    assert engine.reduce(src) == src  # a verdict cut short is no verdict: nothing accepted
    assert time.monotonic() - start < 10 and len(cancelled) == 2 and engine.stats.tested == 0
