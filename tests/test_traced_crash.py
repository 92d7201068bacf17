"""Crashes at the traced level: each transformed call is recorded ahead, so a program that dies by a
signal leaves its last call behind; the recorded jaxpr is replayed in a worker's child, which alone
dies (real segfaults: Enzyme-JAX's derivative of sort, XLA:CPU's rank-7 reduction; no mocks)."""
import signal
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

from conftest import PROGRAMS, needs_enzyme
from oracles.crash import Crash
from reducer.levels.jaxpr import calls_recorded_ahead
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.codec import Encoder
from reducer.levels.jaxpr.failing_call import capture
from reducer.levels.jaxpr.level import reduce_traced
from reducer.levels.jaxpr.worker import run_spec
from reducer.workers.sandbox import Limits, Sandbox

LIMITS = Limits(timeout=120)


def harmless_spec() -> str:
    import jax

    body = Encoder().closed(jax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(jnp.ones(3)))
    return jp.dumps({"transforms": [{"t": "jit"}], "jaxpr": body, "args": [{"shape": [3], "dtype": "float32"}]})


@pytest.mark.slow
@needs_enzyme
def test_a_call_that_dies_is_recorded_ahead_and_its_replay_kills_only_the_child(tmp_path):
    source = (PROGRAMS / "median_enzyme_segfault.py").read_text()
    sandbox = Sandbox(tmp_path / "runs")
    crash = Crash()
    try:
        wanted = crash.classify(sandbox.run(source, LIMITS, fresh=True))
        assert wanted is not None and wanted.get("detail").startswith("SIGSEGV in enzyme_ad/")
        assert capture(sandbox, source, LIMITS)["specs"] == []  # nothing raised: nothing to catch
        found = capture(sandbox, source, LIMITS, ahead=True)
        first = jp.loads(found["ahead"][0])
        assert [t["t"] for t in first["transforms"]] == ["jit", "grad", "enzyme"]
        assert first["args"][0]["values"] == [3.0, 1.0, 2.0]
        assert "sort" in {e["p"] for _, j in jp.jaxprs(first["jaxpr"]) for e in j["eqns"]}
        replay = run_spec(sandbox, found["ahead"][0], LIMITS, 60)
        assert replay.signal == signal.SIGSEGV and crash.judge(wanted, replay)[0], replay.stderr[-2000:]
        after = run_spec(sandbox, harmless_spec(), LIMITS, 60)  # the worker lives on; its child died
        assert after.returncode == 0, after.stderr[-2000:]
    finally:
        sandbox.close()


@pytest.mark.slow
def test_a_crash_on_an_xla_thread_reduces_at_the_traced_level_to_a_script_that_still_dies(tmp_path):
    source = (PROGRAMS / "rank7_sum_segfault.py").read_text()
    sandbox = Sandbox(tmp_path / "runs")
    crash = Crash()
    try:
        wanted = crash.classify(sandbox.run(source, LIMITS, fresh=True))
        assert wanted is not None and wanted.get("how") == "signal"
        result = reduce_traced(source, sandbox, LIMITS, crash, wanted, lambda line: None, budget=90)
    finally:
        sandbox.close()
    assert result is not None and result.verified.startswith("yes"), result
    assert result.equations_after <= 3 and result.transforms == ["jit"]
    script = tmp_path / "repro.py"
    script.write_text(result.script)
    if result.arrays:
        np.savez(tmp_path / "inputs.npz", **result.arrays)
    rerun = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert rerun.returncode == -signal.SIGSEGV, rerun.stderr[-2000:]



def test_the_call_a_process_died_in_comes_first_after_many_others(tmp_path):
    """Ten jitted functions run, then an eleventh dies: its call leads the record, the oldest are dropped."""
    source = ("import jax\nimport jax.numpy as jnp\n"
              "for k in range(10):\n    jax.jit(lambda x, k=k: x * k)(jnp.ones(2)).block_until_ready()\n"
              "u = jnp.ones((3, 1, 2, 2, 8, 8, 8))\n"
              "jax.jit(lambda a, b: jnp.sum(a * b, axis=3))(u, u).block_until_ready()\n")
    sandbox = Sandbox(tmp_path / "runs")
    try:
        found = capture(sandbox, source, LIMITS, ahead=True)
    finally:
        sandbox.close()
    first = jp.loads(found["ahead"][0])
    assert [e["p"] for e in first["jaxpr"]["eqns"]][-2:] == ["mul", "reduce_sum"]
    assert len(found["ahead"]) == calls_recorded_ahead.MAX_GROUPS
