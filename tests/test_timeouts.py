"""The adaptive candidate timeout follows the interesting runs, within its floor and start."""
from reducer.timeouts import AdaptiveTimeout


def test_starts_at_the_initial_limit_then_follows_the_slowest_recent_run():
    t = AdaptiveTimeout(40.0, floor=8.0, factor=4.0, window=3)
    assert t.value == 40.0
    t.record(0.5)
    assert t.value == 8.0  # never below the floor
    t.record(3.0)
    assert t.value == 12.0
    for _ in range(3):
        t.record(1.0)
    assert t.value == 8.0  # the slow run fell out of the window
    t.record(30.0)
    assert t.value == 40.0  # never above the initial limit


def test_floor_never_exceeds_the_initial_limit():
    t = AdaptiveTimeout(5.0, floor=8.0)
    t.record(0.1)
    assert t.value == 5.0


# -- a candidate counts only when its process ends ----------------------------------------------------------
PRINTS_THE_FAILURE = """import traceback
import jax
import jax.numpy as jnp
from jax.scipy.linalg import schur
try:
    jax.grad(lambda a: jnp.sum(schur(a)[0]))(jnp.eye(2))
except Exception:
    traceback.print_exc()
"""
#: then never ends: an endless loop already dispatched to XLA, or one in Python
ENDLESS_IN_XLA = "jax.lax.while_loop(lambda v: v > -1.0, lambda v: v + 1.0, 0.0).block_until_ready()\n"
ENDLESS_IN_PYTHON = "while True:\n    pass\n"


def test_a_candidate_that_prints_the_failure_then_never_ends_is_rejected(tmp_path):
    import oracles
    from oracles.crash import Crash
    from oracles.generic import Regex
    from reducer.workers.sandbox import Limits, Sandbox

    box = Sandbox(tmp_path / "runs", script_name="prog.py", warm=True, warm_modules=("jax", "jax.numpy"))
    try:
        ended = box.run(PRINTS_THE_FAILURE + "raise SystemExit(1)\n", Limits(timeout=120))
        oracle, wanted = oracles.detect(ended)
        assert (wanted.family, wanted.get("op")) == ("adjoint-missing", "schur"), wanted
        regex = Regex("Differentiation rule for 'schur' not implemented")
        assert oracle.judge(wanted, ended)[0] and regex.judge(regex.classify(ended), ended)[0]
        for endless in (ENDLESS_IN_XLA, ENDLESS_IN_PYTHON):
            hung = box.run(PRINTS_THE_FAILURE + endless, Limits(timeout=8))
            assert hung.timed_out and "not implemented" in hung.stderr, hung.stderr[-2000:]
            assert oracle.judge(wanted, hung) == (False, None)
            assert regex.judge(regex.classify(ended), hung) == (False, None)
            hangs = Crash(hangs=True)
            assert hangs.judge(hangs.classify(hung), hung)[0]  # with --hangs, the hang is the failure
    finally:
        box.close()
