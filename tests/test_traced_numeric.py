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
from reducer.levels.jaxpr import as_users_write, value_checks
from reducer.levels.jaxpr.codec import Encoder
from reducer.levels.jaxpr.as_script import NPZ, emit
from reducer.levels.jaxpr.level import reduce_traced
from reducer.levels.jaxpr.model import Spec
from reducer.workers.sandbox import Limits, Sandbox


def spec_with_values(fun, *args, transforms):
    closed = jax.make_jaxpr(fun)(*args)
    return {"transforms": transforms, "jaxpr": Encoder().closed(closed),
            "args": [{"shape": list(np.shape(a)), "dtype": str(jnp.result_type(a)),
                      "values": np.asarray(a).ravel().tolist()} for a in args]}


ENZYME_GRAD = [{"t": "jit"}, {"t": "grad", "argnums": [0]}, {"t": "enzyme"}]


def finished(spec: dict, wanted: Signature) -> str:
    """The written-back script of the spec data `spec`, finished to compare as `wanted` says."""
    model = Spec.from_data(spec)
    return value_checks.finish_script(emit(model)[0], model, wanted)


def checked(spec: dict, check: str, tmp_path, monkeypatch, explain: bool = False) -> tuple[bool, dict]:
    """Run the check in this interpreter: whether it failed the run, and the report it wrote."""
    out = tmp_path / "harness.json"
    monkeypatch.setenv("REDUCER_HARNESS_OUT", str(out))
    try:
        value_checks.run_check(Spec.from_json(value_checks.with_check(json.dumps(spec), check, explain)))
        failed = False
    except value_checks.NumericMismatch:
        failed = True
    return failed, json.loads(out.read_text())


@needs_enzyme
def test_the_gradient_check_finds_enzymes_wrong_digamma_derivative_in_the_jaxpr(tmp_path, monkeypatch):
    def f(x):
        return jnp.sum(jnp.exp(x) + jax.scipy.special.digamma(x) * 2.0)

    spec = spec_with_values(f, jnp.array([1.5, 2.5]), transforms=ENZYME_GRAD)
    failed, report = checked(spec, "gradient", tmp_path, monkeypatch)
    assert failed and report["checks"][0]["mismatch"] and report["checks"][0]["operation"] == "digamma"
    assert "at_fault" not in report["checks"][0] and "recorded" not in report  # a candidate pays for neither
    # the first replay's: float64 finite differences at the operation at fault side with JAX's AD, and
    # the values of the call's equations, which a cut gives the inputs it makes
    report = checked(spec, "gradient", tmp_path, monkeypatch, explain=True)[1]
    assert any(v == pytest.approx([float(jnp.exp(1.5)), float(jnp.exp(2.5))]) for v in report["recorded"].values())
    found = report["checks"][0]["at_fault"]
    assert found["operation"] == "digamma" and found["at"] in (pytest.approx(1.5), pytest.approx(2.5))
    trigamma = float(jax.scipy.special.polygamma(1, found["at"]))
    assert found["fd"] == pytest.approx(trigamma, rel=1e-6) and found["jax"] == pytest.approx(trigamma, rel=1e-5)
    assert found["wrong"] == "enzyme" and not jax.config.jax_enable_x64  # float64 switched off again
    line = value_checks.fault_line(RunResult(1, "", "", 1.0, harness=report))
    assert line.startswith(f"Enzyme-JAX's derivative of `digamma` at {found['at']:.6g} is ") and \
        "JAX's is" in line and "Enzyme-JAX's derivative is the wrong one" in line
    agreeing = spec_with_values(lambda x: jnp.sum(jnp.sin(x) * x), jnp.array([1.5, 2.5]), transforms=ENZYME_GRAD)
    failed, report = checked(agreeing, "gradient", tmp_path, monkeypatch)
    assert not failed and report["checks"][0]["mismatch"] is False
    # without the compiling `jit` Enzyme-JAX cannot run the derivative: no longer what the check compares
    assert not value_checks.matches_check(Spec.from_data(dict(spec, transforms=ENZYME_GRAD[1:])), "gradient")


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


def summed_points(n: int = 32_769) -> dict:
    """`jnp.sum(M @ points.T, axis=0)` under `jit` over `n` points: XLA:CPU sums wrongly past 32768
    (another row's: 32 back on one machine, so rows that differ by more than the CPU reference's 1e-3)."""
    i = jnp.arange(n, dtype=jnp.float32) % 1013
    points = jnp.stack((i, jnp.zeros_like(i), jnp.zeros_like(i)), axis=1)
    return spec_with_values(lambda x: jnp.sum(jnp.ones((3, 3), jnp.float32) @ x.T, axis=0), points,
                            transforms=[{"t": "jit"}])


def written_back_run(spec: dict, wanted: Signature, tmp_path) -> tuple[str, subprocess.CompletedProcess]:
    """The written-back script of `spec` for `wanted`, and its run in a fresh interpreter."""
    model = Spec.from_data(spec)
    text, arrays = emit(model)
    text = value_checks.finish_script(text, model, wanted)
    (tmp_path / "repro.py").write_text(text)
    np.savez(tmp_path / NPZ, **arrays)
    return text, subprocess.run([sys.executable, "repro.py"], capture_output=True, text=True, timeout=300,
                                cwd=tmp_path)


@pytest.mark.slow
def test_the_written_back_script_compares_jit_with_op_by_op_and_stops_with_the_programs_message(tmp_path):
    spec = summed_points()
    wanted = Signature("wrong-result", (("source", "jit"), ("reference", "op-by-op"), ("op", "reduce_sum"),
                                        ("program-exit", "jit and eager results differ")))
    text, done = written_back_run(spec, wanted, tmp_path)
    assert "with jax.disable_jit():" in text and text.rstrip().endswith("raise SystemExit('jit and eager results differ')")
    assert done.returncode == 1 and done.stderr.strip().endswith("jit and eager results differ"), done.stderr[-2000:]
    bare = Signature("wrong-result", wanted.fields[:-1] + (("program-exit", "AssertionError"),))
    assert finished(spec, bare).rstrip().endswith(  # a bare `assert`
        "\nassert jnp.allclose(got, want, rtol=0.0001, atol=1e-06, equal_nan=True)")


@pytest.mark.slow
def test_a_result_wrong_against_the_cpu_alone_is_written_back_against_the_cpu(tmp_path):
    # a GPU-only fault (--platform gpu, reference=cpu): the script computes the reference op by op on
    # the CPU; run here on the CPU, whose own `jit` miscompiles this sum, it still disagrees
    wanted = Signature("wrong-result", (("source", "jit"), ("reference", "cpu"), ("op", "reduce_sum"),
                                        ("program-exit", "GPU and CPU results differ")))
    text, done = written_back_run(summed_points(), wanted, tmp_path)
    assert "jax.device_put((" in text and "atol=max(1e-05, 0.001 * float(" in text
    assert done.returncode == 1 and done.stderr.strip().endswith("GPU and CPU results differ"), done.stderr[-2000:]
    _, done = written_back_run(summed_points(8), wanted, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]


def test_finite_differences_say_which_derivative_is_wrong_and_blame_jax_when_they_side_with_enzyme():
    from oracles.activity_mismatch import fault_sentence
    from reducer.cross_checks.differences import central_difference, which_is_wrong

    jax.config.update("jax_enable_x64", True)
    try:
        x = np.array([0.3, 0.7, 2.0])
        fd, step = central_difference(lambda v: [jnp.sin(v) * v], [x], 0, 1)  # d/dx x sin x at 0.7
        along, _ = central_difference(lambda v: [v ** 3], [x], None, None)  # sum of 3 x^2
    finally:
        jax.config.update("jax_enable_x64", False)
    assert fd == pytest.approx(np.sin(0.7) + 0.7 * np.cos(0.7), rel=1e-8) and step == 1e-6
    assert along == pytest.approx(3 * np.sum(x ** 2), rel=1e-8)
    assert which_is_wrong(float("nan"), 2.0, 2.0000001) == "enzyme"
    assert which_is_wrong(2.0, 5.0, 2.0000001) == "jax-ad"
    assert which_is_wrong(1.0, 5.0, 2.0) == "both" and which_is_wrong(1.0, 5.0, None) == ""
    blamed = fault_sentence({"operation": "erf_inv", "at": 0.7, "input": 0, "enzyme": 2.0, "jax": 5.0, "fd": 2.0,
                             "step": 1e-6, "wrong": "jax-ad"})
    assert blamed == ("Enzyme-JAX's derivative of `erf_inv` at 0.7 is 2; JAX's is 5; float64 central finite "
                      "differences (step 1e-06) give 2: they agree with Enzyme-JAX, not with JAX's AD: JAX's "
                      "derivative is the wrong one, not Enzyme-JAX's")


@pytest.mark.slow
@needs_enzyme
def test_the_written_back_gradient_script_nests_the_calls_and_stops_on_its_own_comparison(tmp_path):
    spec = spec_with_values(lambda x: jnp.sum(jax.scipy.special.digamma(x)), jnp.array([0.7, 2.5]),
                            transforms=ENZYME_GRAD)
    wanted = Signature("activity-mismatch", (("source", "enzyme"), ("kind", "numeric"), ("reference", "jax-ad"),
                                             ("op", "digamma"), ("program-compares", "yes"),
                                             ("program-exit", "gradient mismatch")))
    text = finished(spec, wanted)
    tail = text.splitlines()[-2:]  # no helper names, nothing printed that the failure does not need
    assert tail == ["if not jnp.allclose(jax.jit(jax.grad(enzyme_jax_ir()(f)))(a), jax.grad(f)(a), "
                    "rtol=0.001, atol=1e-05, equal_nan=True):", "    raise SystemExit('gradient mismatch')"], text
    assert "print(" not in text
    both = spec_with_values(lambda x, y: jnp.sum(jax.scipy.special.digamma(x) * y), jnp.array([0.7, 2.5]),
                            jnp.array([1.0, 2.0]), transforms=[{"t": "jit"}, {"t": "value_and_grad", "argnums": [0, 1]},
                                                               {"t": "enzyme"}])
    several = finished(both, wanted)  # a value and two gradients: leaf by leaf
    assert "got = jax.jit(jax.value_and_grad(enzyme_jax_ir()(f), argnums=(0, 1)))(a, b)\n" \
           "want = jax.value_and_grad(f, argnums=(0, 1))(a, b)\nsame = all(" in several
    for script in (text, several):
        (tmp_path / "repro.py").write_text(script)
        done = subprocess.run([sys.executable, "repro.py"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 1 and done.stderr.strip().endswith("gradient mismatch"), done.stderr[-2000:]


@needs_enzyme
def test_arrays_become_scalars_the_operation_at_one_point(tmp_path, monkeypatch):
    from reducer.levels.jaxpr import program as jp
    from reducer.levels.jaxpr.passes.one_point import OnePoint

    def isolated(x):  # what isolate-equation and shrink-dims leave: the operation on ones, summed
        return jnp.sum(jax.scipy.special.digamma(x) * jnp.ones((1, 1)))

    spec = spec_with_values(isolated, jnp.ones((1, 1)), transforms=ENZYME_GRAD)
    (candidate,) = OnePoint().candidates(jp.dumps(spec))
    scalar = jp.loads(candidate)
    assert [e["p"] for e in scalar["jaxpr"]["eqns"]] == ["digamma", "broadcast_in_dim", "mul"]  # no sum left
    assert scalar["args"][0]["shape"] == [] and all(o[1] == [] for e in scalar["jaxpr"]["eqns"] for o in e["out"])
    assert checked(scalar, "gradient", tmp_path, monkeypatch)[0]  # still Enzyme-JAX's wrong derivative
    wanted = Signature("activity-mismatch", (("source", "enzyme"), ("kind", "numeric"), ("op", "digamma"),
                                             ("program-compares", "yes"), ("program-exit", "gradient mismatch")))
    text = finished(scalar, wanted)
    assert "a = jnp.float32(1.0)" in text and "jnp.sum" not in text
    assert "def f(a):" in text  # three operations: the function stays
    alone = spec_with_values(jax.scipy.special.digamma, jnp.float32(1.0), transforms=ENZYME_GRAD)
    text = finished(alone, wanted)
    assert "\nf = lax.digamma\n" in text and "def f" not in text  # one call: the function is that call
    assert not list(OnePoint().candidates(candidate))  # nothing left to make a scalar
    # arrays of more elements: every one a scalar at the input's first value, then the one-element ones
    spec = spec_with_values(lambda x, y: jnp.sum(jax.scipy.special.digamma(x) * 2.0) + jnp.sum(y @ y),
                            jnp.array([1.5, 2.5]), jnp.ones((1, 1)), transforms=ENZYME_GRAD)
    every, telling, ones = (jp.loads(c) for c in OnePoint().candidates(jp.dumps(spec)))
    assert every["args"][0] == {"shape": [], "dtype": "float32", "values": [1.5]} and every["args"][1]["shape"] == []
    assert telling["args"][0]["values"] == [2.5]  # then at the value most likely to tell: the largest here
    assert [a["shape"] for a in ones["args"]] == [[2], []]


def test_a_replay_is_judged_on_all_but_the_programs_own_fields():
    oracle = oracles.make_oracle("activity-mismatch")
    wanted = Signature("activity-mismatch", (("source", "enzyme"), ("kind", "numeric"), ("reference", "jax-ad"),
                                             ("op", "digamma"), ("program-compares", "yes"),
                                             ("program-exit", "gradient mismatch")))

    def replay(op):
        check = {"function": "f", "mismatch": True, "operation": op, "max_abs_err": 1.0, "rtol": 1e-3, "atol": 1e-5}
        harness = {"program": {"exit": 1}, "gradients": {"enzyme": 1, "plain": 0}, "checks": [check]}
        return RunResult(1, "", "NumericMismatch: gradient check", 1.0, harness=harness)

    assert value_checks.same(oracle, wanted, replay("digamma"))[0]
    assert not value_checks.same(oracle, wanted, replay("lgamma"))[0]
    assert not oracle.judge(wanted, replay("digamma"))[0]  # the whole program's oracle wants its message too
    run = replay("digamma")
    run.harness["checks"][0]["at_fault"] = {"operation": "digamma", "at": 1.0, "input": 0, "enzyme": float("nan"),
                                            "jax": 1.64493, "fd": 1.64493, "step": 1e-6, "wrong": "enzyme"}
    ok, seen = value_checks.same(oracle, wanted, run)  # the three derivatives are told, not part of the identity
    assert ok and seen.excerpt.startswith("Enzyme-JAX's derivative of `digamma` at 1 is nan; JAX's is 1.64493; ")


def reduced_at_the_traced_level(program: str, tmp_path) -> tuple:
    """The traced level's result for a test program whose Enzyme-JAX digamma gradient the program
    compares with JAX's, and the level's log."""
    source = (PROGRAMS / program).read_text()
    sandbox = Sandbox(tmp_path / "runs", check_gradients=True)
    limits = Limits(timeout=120)
    try:
        oracle, wanted = oracles.detect(sandbox.run(source, limits, fresh=True))
        assert wanted.get("op") == "digamma" and wanted.get("program-compares") == "yes"
        logged = []
        return reduce_traced(source, sandbox, limits, oracle, wanted, logged.append, budget=120), logged
    finally:
        sandbox.close()


@needs_enzyme
@pytest.mark.slow
def test_a_wrong_gradient_reduces_at_the_traced_level_and_the_script_still_compares(tmp_path):
    result, logged = reduced_at_the_traced_level("digamma_mismatch.py", tmp_path)
    assert result is not None and result.verified.startswith("yes"), result
    assert any(line.startswith("jaxpr level: Enzyme-JAX's derivative of `digamma` at 1.5 is ") and
               "they agree with JAX's AD" in line for line in logged), logged
    assert result.equations_after == 1 and "jnp.sum" not in result.script  # digamma at one point
    assert "f = lax.digamma\n" in result.script and "print(" not in result.script, result.script
    assert "raise SystemExit('gradient mismatch between Enzyme-JAX and JAX')" in result.script
    script = tmp_path / "repro.py"
    script.write_text(result.script)
    rerun = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 1 and "gradient mismatch between Enzyme-JAX and JAX" in rerun.stderr


def test_an_enzyme_function_differentiated_inside_a_larger_one_is_recorded_with_its_own_derivative():
    from reducer.levels.jaxpr import calls_recorded_ahead

    class Call:
        def __init__(self, kind):
            self.kind = kind

    enzyme = Call("enzyme")
    assert calls_recorded_ahead.prefixes(enzyme, []) == [[]]
    assert calls_recorded_ahead.prefixes(enzyme, [Call("jit"), Call("grad")]) == [[("jit", {})], [("jit", {}), ("vjp", {})]]
    assert calls_recorded_ahead.prefixes(enzyme, [Call("jvp")]) == [[], [("jit", {}), ("jvp", {})]]
    assert calls_recorded_ahead.prefixes(Call("grad"), [Call("jit")]) == [[("jit", {})]]  # only Enzyme's own derivative


def test_a_vjp_of_one_scalar_result_is_written_back_as_grad():
    scalar = spec_with_values(lambda x, n: jax.scipy.special.digamma(x) * n, 1.5, 2,
                              transforms=[{"t": "jit"}, {"t": "vjp"}, {"t": "enzyme"}])
    users = as_users_write.as_users_write(Spec.from_data(scalar))
    assert users.kinds() == ["jit", "grad", "enzyme"]
    assert users.transforms[1].argnums == [0]  # the float input only
    vector = Spec.from_data(spec_with_values(jnp.sin, jnp.ones(2), transforms=[{"t": "jit"}, {"t": "vjp"},
                                                                              {"t": "enzyme"}]))
    assert as_users_write.as_users_write(vector) is vector


@needs_enzyme
@pytest.mark.slow
def test_enzyme_inside_a_differentiated_loss_reduces_at_the_traced_level(tmp_path):
    result, logged = reduced_at_the_traced_level("enzyme_inside_loss.py", tmp_path)
    assert result is not None and result.verified.startswith("yes"), logged
    assert result.transforms == ["jit", "vjp", "enzyme"] and result.equations_after == 1, result
    assert "jax.jit(jax.grad(enzyme_jax_ir()(" in result.script and "jax.vjp" not in result.script, result.script
    assert result.story().startswith("At the traced level the failure needs only `digamma` under `jit ∘ vjp ∘ enzyme`")
