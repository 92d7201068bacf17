"""Wrong gradients and wrong results at the traced level: the replay's own check on the jaxpr (real
Enzyme-JAX and XLA disagreements, no mocks), and a written-back script that still compares."""
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import oracles
from conftest import PROGRAMS, needs_enzyme
from oracles.outcome import RunResult, Signature
from reducer.levels.jaxpr import numeric
from reducer.levels.jaxpr.codec import Encoder
from reducer.levels.jaxpr.emit import NPZ, emit
from reducer.levels.jaxpr.level import reduce_traced
from reducer.workers.sandbox import Limits, Sandbox


def spec_with_values(fun, *args, transforms):
    closed = jax.make_jaxpr(fun)(*args)
    return {"transforms": transforms, "jaxpr": Encoder().closed(closed),
            "args": [{"shape": list(np.shape(a)), "dtype": str(jnp.result_type(a)),
                      "values": np.asarray(a).ravel().tolist()} for a in args]}


ENZYME_GRAD = [{"t": "jit"}, {"t": "grad", "argnums": [0]}, {"t": "enzyme"}]


def checked(spec: dict, check: str, tmp_path, monkeypatch) -> tuple[bool, dict]:
    """Run the check in this interpreter: whether it failed the run, and the report it wrote."""
    out = tmp_path / "harness.json"
    monkeypatch.setenv("REDUCER_HARNESS_OUT", str(out))
    try:
        numeric.run_check(dict(spec, check=check))
        failed = False
    except numeric.NumericMismatch:
        failed = True
    return failed, json.loads(out.read_text())


@needs_enzyme
def test_the_gradient_check_finds_enzymes_wrong_digamma_derivative_in_the_jaxpr(tmp_path, monkeypatch):
    def f(x):
        return jnp.sum(jnp.exp(x) + jax.scipy.special.digamma(x) * 2.0)

    spec = spec_with_values(f, jnp.array([1.5, 2.5]), transforms=ENZYME_GRAD)
    failed, report = checked(spec, "gradient", tmp_path, monkeypatch)
    assert failed and report["checks"][0]["mismatch"] and report["checks"][0]["operation"] == "digamma"
    agreeing = spec_with_values(lambda x: jnp.sum(jnp.sin(x) * x), jnp.array([1.5, 2.5]), transforms=ENZYME_GRAD)
    failed, report = checked(agreeing, "gradient", tmp_path, monkeypatch)
    assert not failed and report["checks"][0]["mismatch"] is False
    # without the compiling `jit` Enzyme-JAX cannot run the derivative: no longer what the check compares
    assert not numeric.fits(dict(spec, transforms=ENZYME_GRAD[1:]), "gradient")


def test_the_result_check_finds_the_jit_miscompile_in_the_jaxpr(tmp_path, monkeypatch):
    i = jnp.arange(32_769, dtype=jnp.float32)
    points = jnp.stack((i, jnp.zeros_like(i), jnp.zeros_like(i)), axis=1)

    def squared_norms(x):
        return jax.vmap(lambda row: jnp.sum((jnp.eye(3, dtype=jnp.float32) @ row) ** 2))(x)

    spec = spec_with_values(squared_norms, points, transforms=[{"t": "jit"}])
    failed, report = checked(spec, "result", tmp_path, monkeypatch)
    assert failed and report["results"][0]["mismatch"] and report["results"][0]["operation"] == "reduce_sum"
    fine = spec_with_values(squared_norms, points[:8], transforms=[{"t": "jit"}])
    assert checked(fine, "result", tmp_path, monkeypatch)[0] is False


def test_the_written_back_script_compares_jit_with_op_by_op_and_stops_with_the_programs_message(tmp_path):
    i = jnp.arange(32_769, dtype=jnp.float32)
    points = jnp.stack((i, jnp.zeros_like(i), jnp.zeros_like(i)), axis=1)
    spec = spec_with_values(lambda x: jnp.sum(jnp.ones((3, 3), jnp.float32) @ x.T, axis=0), points,
                            transforms=[{"t": "jit"}])
    wanted = Signature("wrong-result", (("source", "jit"), ("reference", "op-by-op"), ("op", "reduce_sum"),
                                        ("program-exit", "jit and eager results differ")))
    text, arrays = emit(spec)
    text = numeric.finish_script(text, spec, wanted)
    assert "with jax.disable_jit():" in text and text.rstrip().endswith("raise SystemExit('jit and eager results differ')")
    (tmp_path / "repro.py").write_text(text)
    np.savez(tmp_path / NPZ, **arrays)
    done = subprocess.run([sys.executable, "repro.py"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.strip().endswith("jit and eager results differ"), done.stderr[-2000:]
    bare = Signature("wrong-result", wanted.fields[:-1] + (("program-exit", "AssertionError"),))
    assert numeric.finish_script(emit(spec)[0], spec, bare).rstrip().endswith("\nassert same")  # a bare `assert`


def test_a_replay_is_judged_on_all_but_the_programs_own_fields():
    oracle = oracles.make_oracle("activity-mismatch")
    wanted = Signature("activity-mismatch", (("source", "enzyme"), ("kind", "numeric"), ("reference", "jax-ad"),
                                             ("op", "digamma"), ("program-compares", "yes"),
                                             ("program-exit", "gradient mismatch")))

    def replay(op):
        check = {"function": "f", "mismatch": True, "operation": op, "max_abs_err": 1.0, "rtol": 1e-3, "atol": 1e-5}
        harness = {"program": {"exit": 1}, "gradients": {"enzyme": 1, "plain": 0}, "checks": [check]}
        return RunResult(1, "", "NumericMismatch: gradient check", 1.0, harness=harness)

    assert numeric.same(oracle, wanted, replay("digamma"))[0]
    assert not numeric.same(oracle, wanted, replay("lgamma"))[0]
    assert not oracle.judge(wanted, replay("digamma"))[0]  # the whole program's oracle wants its message too


@needs_enzyme
@pytest.mark.slow
def test_a_wrong_gradient_reduces_at_the_traced_level_and_the_script_still_compares(tmp_path):
    source = (PROGRAMS / "digamma_mismatch.py").read_text()
    sandbox = Sandbox(tmp_path / "runs", check_gradients=True)
    limits = Limits(timeout=120)
    try:
        oracle, wanted = oracles.detect(sandbox.run(source, limits, fresh=True))
        assert wanted.get("op") == "digamma" and wanted.get("program-compares") == "yes"
        result = reduce_traced(source, sandbox, limits, oracle, wanted, lambda line: None, budget=120)
    finally:
        sandbox.close()
    assert result is not None and result.verified.startswith("yes"), result
    assert result.equations_after <= 3
    assert "raise SystemExit('gradient mismatch between Enzyme-JAX and JAX')" in result.script
    script = tmp_path / "repro.py"
    script.write_text(result.script)
    rerun = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 1 and "gradient mismatch between Enzyme-JAX and JAX" in rerun.stderr
