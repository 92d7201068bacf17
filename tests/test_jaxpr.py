"""The traced-program (jaxpr) level: encoding, running, passes, capture, write-back, end to end."""
import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import oracles
from conftest import PROGRAMS, needs_enzyme, reducer_cli
from reducer import jaxpr_program as jp
from reducer.jaxpr_codec import Encoder, encode_param
from reducer.jaxpr_emit import emit
from reducer.jaxpr_reduce import parse_levels, reduce_traced
from reducer.passes import jaxpr_passes
from reducer.passes.jaxpr.bypass_equations import BypassEquations
from reducer.passes.jaxpr.drop_equations import DropEquations
from reducer.passes.jaxpr.drop_inputs import DropInputs
from reducer.passes.jaxpr.drop_operands import DropOperands
from reducer.passes.jaxpr.drop_outputs import DropOutputs
from reducer.passes.jaxpr.inline_calls import InlineCalls
from reducer.passes.jaxpr.narrow_dtypes import NarrowDtypes
from reducer.passes.jaxpr.promote_to_inputs import PromoteToInputs
from reducer.passes.jaxpr.shrink_dims import ShrinkDims
from reducer.passes.jaxpr.unwrap_control_flow import UnwrapControlFlow
from reducer.sandbox import Limits, Sandbox

REP = jp.JaxprSpec()


def spec_of(fun, *args, transforms=()):
    """The spec of `fun` traced on `args`, with the given transformations (outermost first)."""
    closed = jax.make_jaxpr(fun)(*args)
    body = Encoder().closed(closed)
    return jp.dumps({"transforms": list(transforms), "jaxpr": body,
                     "args": [{"shape": list(np.shape(a)), "dtype": str(jnp.result_type(a))} for a in args]})


def mlp(w, x):
    h = jnp.tanh(x @ w)
    h = jax.jit(lambda v: jnp.sin(v) * 2.0)(h)
    return jnp.sum(h * h) + jnp.mean(jnp.exp(h))


def looped(x):
    def body(c):
        i, v = c
        return i + 1, v * 0.5 + jnp.cos(v)

    _, v = lax.while_loop(lambda c: c[0] < 3, body, (0, x))
    s = lax.scan(lambda c, a: (c + a, c * a), 0.0, x)[0]
    return jnp.sum(v) + s + lax.cond(x[0] > 0, jnp.sum, jnp.prod, x)


W, X = jnp.ones((3, 4)) * 0.1, jnp.linspace(-1, 1, 6).reshape(2, 3)


def run_value(program):
    return np.asarray(jp.run(program))


# -- encoding and running ----------------------------------------------------------------------------
def test_spec_runs_like_the_function():
    program = spec_of(mlp, W, X, transforms=[{"t": "jit"}, {"t": "grad", "argnums": [0]}])
    spec = jp.loads(program)
    spec["args"] = [{"shape": [3, 4], "dtype": "float32", "values": np.asarray(W).ravel().tolist()},
                    {"shape": [2, 3], "dtype": "float32", "values": np.asarray(X).ravel().tolist()}]
    got = run_value(jp.dumps(spec))
    np.testing.assert_allclose(got[0], jax.grad(mlp)(W, X), rtol=1e-5)  # argnums=(0,): a tuple
    assert REP.verify(program) and REP.size(program) == jp.count_eqns(spec["jaxpr"]) + 2 + 2


def test_control_flow_specs_run():
    x = jnp.array([0.5, 1.0, 2.0])
    spec = jp.loads(spec_of(looped, x))
    prims = {e["p"] for e in spec["jaxpr"]["eqns"]}
    assert {"while", "scan", "cond"} <= prims
    spec["args"][0]["values"] = [0.5, 1.0, 2.0]
    np.testing.assert_allclose(run_value(jp.dumps(spec)), looped(x), rtol=1e-5)


def test_custom_rules_and_remat_are_inlined_while_encoding():
    def fun(x):
        return jnp.sum(jax.nn.relu(x)) + jnp.sum(jax.checkpoint(jnp.sin)(x))

    x = jnp.array([-1.0, 0.5, 2.0])
    spec = jp.loads(spec_of(fun, x))
    prims = {e["p"] for _, j in jp.jaxprs(spec["jaxpr"]) for e in j["eqns"]}
    assert not prims & {"custom_jvp_call", "remat", "checkpoint"}
    spec["args"][0]["values"] = [-1.0, 0.5, 2.0]
    np.testing.assert_allclose(run_value(jp.dumps(spec)), fun(x), rtol=1e-6)


def test_size_key_and_verify():
    program = spec_of(mlp, W, X, transforms=[{"t": "grad", "argnums": [0]}])
    bad = jp.loads(program)
    bad["transforms"][0]["argnums"] = [5]
    assert not REP.verify(jp.dumps(bad))
    dangling = jp.loads(program)
    dangling["jaxpr"]["out"] = ["nowhere"]
    assert not REP.verify(jp.dumps(dangling))
    assert not REP.verify("{not json")


# -- passes ------------------------------------------------------------------------------------------
def candidates(p, program, n=None):
    out = []
    for c in p.candidates(program):
        out.append(c)
        if n and len(out) >= n:
            break
    return out


@pytest.mark.parametrize("make", [DropEquations, BypassEquations, PromoteToInputs, InlineCalls, ShrinkDims])
def test_pass_candidates_are_smaller_and_well_formed_and_run(make):
    program = spec_of(mlp, W, X, transforms=[{"t": "grad", "argnums": [0]}])
    found = candidates(make(), program, 6)
    assert found, make.name
    for c in found:
        assert REP.key(c) < REP.key(program) or c == program
        if REP.key(c) < REP.key(program):
            assert REP.verify(c)
            assert np.all(np.isfinite(run_value(c)))


def test_drop_equations_goes_latest_first_in_halves():
    program = spec_of(mlp, W, X)
    first = next(DropEquations().candidates(program))
    assert jp.count_eqns(jp.loads(first)["jaxpr"]) < jp.count_eqns(jp.loads(program)["jaxpr"]) / 2 + 1


def test_inline_calls_removes_the_inner_jit():
    program = spec_of(mlp, W, X)
    (inlined,) = candidates(InlineCalls(), program)
    assert "jit" not in {e["p"] for e in jp.loads(inlined)["jaxpr"]["eqns"]}
    np.testing.assert_allclose(run_value(inlined), run_value(program), rtol=1e-6)


def test_unwrap_control_flow_replaces_loops_by_their_bodies():
    program = spec_of(looped, jnp.ones(3))
    found = candidates(UnwrapControlFlow(), program)
    assert len(found) == 4  # while, scan, and each branch of the cond
    for c in found:
        assert REP.verify(c) and REP.key(c) < REP.key(program)
        run_value(c)
    kinds = [{e["p"] for e in jp.loads(c)["jaxpr"]["eqns"]} for c in found]
    assert "while" not in kinds[0] and "scan" not in kinds[1] and "cond" not in kinds[2]


def test_drop_outputs_and_inputs():
    program = spec_of(lambda a, b, c: (a * 2.0, b + 1.0), W, W, X)
    (fewer,) = [c for c in candidates(DropOutputs(), program) if len(jp.loads(c)["jaxpr"]["out"]) == 1][:1]
    spec = jp.loads(fewer)
    assert len(spec["jaxpr"]["in"]) == 3
    dropped = next(DropInputs().candidates(fewer))
    assert len(jp.loads(dropped)["jaxpr"]["in"]) == 1
    run_value(dropped)
    spec["args"][0]["values"] = [1.0] * 12
    forgot = [c for c in DropInputs().candidates(jp.dumps(spec)) if "values" not in jp.loads(c)["args"][0]]
    assert forgot and all(REP.key(c) < REP.key(jp.dumps(spec)) for c in forgot)


def test_drop_operands_of_loops_and_calls():
    def fun(x, y):
        _, a, _ = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0, c[2] + 1.0), (0, x, y))
        return jnp.sum(a) + jax.jit(lambda u, v: jnp.sum(u))(x, y)

    program = spec_of(fun, jnp.ones(2), jnp.ones(3))
    found = candidates(DropOperands(), program)
    assert len(found) == 2  # the while's carry that only feeds itself, the jit's unread operand
    for c in found:
        assert REP.verify(c) and REP.key(c) < REP.key(program)
        np.testing.assert_allclose(run_value(c), run_value(program))
    loop = next(e for e in jp.loads(found[0])["jaxpr"]["eqns"] if e["p"] == "while")
    assert len(loop["out"]) == 2


def test_shrink_dims_substitutes_sizes_everywhere():
    program = spec_of(mlp, W, X)
    first = next(ShrinkDims().candidates(program))
    spec = jp.loads(first)
    assert 4 not in spec["args"][0]["shape"]
    assert run_value(first).shape == ()


def test_narrow_dtypes_leaves_64_bit_mode():
    jax.config.update("jax_enable_x64", True)
    try:
        program = jp.loads(spec_of(mlp, np.ones((3, 4)), np.ones((2, 3))))
    finally:
        jax.config.update("jax_enable_x64", False)
    program["x64"] = True
    assert program["args"][0]["dtype"] == "float64"
    text = jp.dumps(program)
    (narrow,) = candidates(NarrowDtypes(), text)
    assert "float64" not in narrow and "x64" not in jp.loads(narrow) and REP.key(narrow) < REP.key(text)
    assert run_value(narrow).dtype == np.float32
    assert not candidates(NarrowDtypes(), narrow)


def test_passes_are_registered():
    names = [p.name for p in jaxpr_passes()]
    assert {"drop-equations", "promote-to-inputs", "inline-calls", "unwrap-control-flow", "shrink-dims"} <= set(names)


def test_parse_levels():
    assert parse_levels("auto") is None
    assert parse_levels("source,jaxpr") == ("source", "jaxpr")
    with pytest.raises(ValueError, match="unknown level"):
        parse_levels("ast")


# -- capture and write-back -----------------------------------------------------------------------------
def capture(script: Path, tmp_path: Path) -> dict:
    out = tmp_path / "captured.json"
    subprocess.run([sys.executable, "-m", "reducer.jaxpr_capture", str(script), str(out)], cwd=tmp_path,
                   capture_output=True, timeout=120)
    return json.loads(out.read_text())


def test_capture_records_the_failing_grad_and_it_reproduces(tmp_path):
    found = capture(PROGRAMS / "while_loop_grad.py", tmp_path)
    assert found["error"].startswith("ValueError: Reverse-mode differentiation")
    spec = jp.loads(found["specs"][0])
    assert spec["transforms"] == [{"t": "grad", "argnums": [0]}]
    assert spec["args"][0]["values"] == [2.0]
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jp.run(found["specs"][0])


@needs_enzyme
def test_capture_keeps_the_chain_of_nested_transformations(tmp_path):
    found = capture(PROGRAMS / "top_k_enzyme.py", tmp_path)
    spec = jp.loads(found["specs"][0])
    assert [t["t"] for t in spec["transforms"]] == ["jit", "grad", "enzyme"]
    assert "top_k" in {e["p"] for e in spec["jaxpr"]["eqns"]}
    assert [a["shape"] for a in spec["args"]] == [[4, 5], [3, 4], [3]]


def test_cli_rejects_unknown_levels(tmp_path):
    done = reducer_cli("reduce", PROGRAMS / "while_loop_grad.py", "--levels", "ast", "--out", tmp_path / "o")
    assert done.returncode == 2 and "--levels: unknown level ast" in done.stderr


def test_written_back_script_reproduces(tmp_path):
    def loss(x):
        return jnp.sum(lax.while_loop(lambda v: jnp.sum(v) < 10.0, lambda v: v * 2.0 + jnp.sin(v), x))

    program = spec_of(loss, jnp.ones(3), transforms=[{"t": "jit"}, {"t": "grad", "argnums": [0]}])
    text, arrays = emit(jp.loads(program))
    assert "lax.while_loop(" in text and "jax.grad(f, argnums=(0,))" in text and not arrays
    assert ".bind(" not in text and "jnp.sum(" in text
    script = tmp_path / "repro.py"
    script.write_text(text)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert "Reverse-mode differentiation does not work for lax.while_loop" in done.stderr


def test_emit_writes_large_values_to_npz_and_binds_only_when_asked():
    spec = jp.loads(spec_of(mlp, W, X))
    spec["args"][0]["values"] = list(range(12))
    spec["args"][1]["values"] = [float(v) for v in range(6)]
    text, arrays = emit(spec)
    assert "INPUTS = np.load('inputs.npz')" not in text and not arrays  # small: inline
    spec["args"][0] = {"shape": [30, 4], "dtype": "float32", "values": [1.0] * 120}
    text, arrays = emit(spec)
    assert "np.load('inputs.npz')" in text and list(arrays) == ["a"]
    bound, _ = emit(jp.loads(spec_of(mlp, W, X)), bind_all=True)
    assert "tanh_p.bind(" in bound


# -- end to end ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_flax_style_model_reduces_to_a_few_lax_calls(tmp_path):
    """A Flax-style model (module classes, pytrees, optimizer, jitted training step) whose
    value_and_grad meets a while_loop reduces, at the jaxpr level, to a few-line flat script."""
    source = (PROGRAMS / "flax_style_while.py").read_text()
    sandbox = Sandbox(tmp_path / "runs", script_name="model.py")
    limits = Limits(timeout=60)
    try:
        oracle, sig = oracles.detect(sandbox.run(source, limits, fresh=True))
        result = reduce_traced(source, sandbox, limits, oracle, sig, lambda line: None, budget=60, jobs=1)
    finally:
        sandbox.close()
    assert result is not None and result.verified.startswith("yes")
    assert result.equations_before > 80 and result.equations_after <= 6
    code = [line for line in result.script.splitlines() if line.strip()]
    assert "class " not in result.script and "lax.while_loop(" in result.script
    assert len(code) <= 25, result.script
    script = tmp_path / "repro.py"
    script.write_text(result.script)
    rerun = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert "Reverse-mode differentiation does not work for lax.while_loop" in rerun.stderr


@pytest.mark.slow
@needs_enzyme
def test_cli_chooses_the_jaxpr_level_for_a_flax_style_enzyme_model(tmp_path):
    """Default levels: a program built from classes goes through the jaxpr level, then the source level."""
    done = reducer_cli("reduce", PROGRAMS / "flax_style_topk_enzyme.py", "--out", tmp_path / "out", "--json",
                       "--runs", "1", "--jobs", "2", timeout=400)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["verified"].startswith("yes")
    assert result["levels"][:2] == ["jaxpr", "source"]
    repro = (tmp_path / "out" / "repro.py").read_text()
    assert "enzyme_jax_ir()(" in repro and "lax.top_k(" in repro and "class " not in repro
    assert result["final_tokens"] < result["original_tokens"] / 4
    log = (tmp_path / "out" / "reduce.log").read_text()
    assert "jaxpr level:" in log
    assert "(jaxpr, " in (tmp_path / "out" / "report.md").read_text()  # the levels that ran


def test_shardings_are_dropped_from_parameters():
    """Candidates run on one device: a placement parameter (convert_element_type's sharding) is
    encoded as None rather than making the whole capture fail."""
    from jax.sharding import NamedSharding, PartitionSpec, SingleDeviceSharding

    device = jax.devices()[0]
    assert encode_param(SingleDeviceSharding(device)) is None
    assert encode_param(NamedSharding(jax.make_mesh((1,), ("x",)), PartitionSpec())) is None


def test_linear_algebra_is_written_with_its_public_call():
    program = spec_of(lambda a: jnp.sum(lax.linalg.cholesky(a, symmetrize_input=False)), jnp.eye(2))
    text, _ = emit(jp.loads(program))
    assert "lax.linalg.cholesky(" in text and ".bind(" not in text
    namespace: dict = {}
    exec(compile(text, "repro.py", "exec"), namespace)  # the written script runs as it stands
