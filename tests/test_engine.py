"""The generic driver, with in-process predicates instead of processes."""
import threading

from reducer.engine import Engine
from reducer.levels.source.passes import source_passes
from reducer.levels.source.passes.delete_statements import DeleteStatements
from reducer.levels.source.representation import PythonSource


def reduce(src, pred, jobs=1, passes=None):
    rep = PythonSource()
    calls = []

    def test(cand, cancel):
        calls.append(cand)
        return pred(cand)

    engine = Engine(rep, passes or source_passes(), test, jobs=jobs)
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
    assert engine.stats.cache_hits >= 0 and engine.stats.tested == len(calls)


def test_only_smaller_candidates_are_tested():
    rep = PythonSource()
    sizes = []
    best, _, calls = reduce(PROGRAM, lambda c: sizes.append(rep.size(c)) or "jnp.mean" in c)
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

    engine = Engine(rep, [DeleteStatements()], test, stop=stop)
    src = rep.normalize(PROGRAM)
    best = engine.reduce(src)
    assert len(seen) <= 3 and rep.size(best) <= rep.size(src)


def test_uninteresting_everything_keeps_the_original():
    src = PythonSource().normalize(PROGRAM)
    best, engine, _ = reduce(PROGRAM, lambda c: False)
    assert best == src and engine.stats.accepted == 0


def test_stall_budget_stops_a_reduction_that_finds_nothing():
    import time

    rep = PythonSource()
    calls = []

    def test(cand, cancel):
        calls.append(cand)
        time.sleep(0.02)
        return False

    engine = Engine(rep, source_passes(), test, stall=0.3)
    start = time.monotonic()
    assert engine.reduce(rep.normalize(PROGRAM)) == rep.normalize(PROGRAM)
    assert engine.stalled and time.monotonic() - start < 5
    full = Engine(rep, source_passes(), lambda c, e: False)
    full.reduce(rep.normalize(PROGRAM))
    assert len(calls) < full.stats.tested  # without the budget every candidate is tried


class Named:
    """A pass that proposes what `propose(program)` returns, under a name."""

    def __init__(self, name, propose):
        self.name, self.propose = name, propose

    def candidates(self, program):
        yield from self.propose(program)


def test_passes_that_cut_most_per_candidate_go_first_in_later_rounds():
    rep = PythonSource()
    order = []
    # "tiny" drops one leading `a` statement per candidate, "big" halves the program
    tiny = Named("tiny", lambda prog: [prog.split("\n", 1)[1]] if prog.startswith("a") else [])
    big = Named("big", lambda prog: ["\n".join(prog.splitlines()[: len(prog.splitlines()) // 2]) + "\n"]
                if prog.count("\n") > 1 else [])
    program = "".join(f"a{i} = {i}\n" for i in range(3)) + "".join(f"x{i} = {i}\n" for i in range(40))
    engine = Engine(rep, [tiny, big], lambda cand, cancel: True, reorder=True,
                    on_event=lambda e: e.kind == "pass" and order.append(e.pass_name))
    assert engine.reduce(program) == "x0 = 0\n"
    assert order[:2] == ["tiny", "big"]
    assert order[2:4] == ["big", "tiny"]
    fixed = Engine(rep, [tiny, big], lambda cand, cancel: True)
    fixed.reduce(program)
    assert [p.name for p in fixed.pass_order()] == ["tiny", "big"]
