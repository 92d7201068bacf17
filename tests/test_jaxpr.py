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
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.codec import Encoder, encode_param
from reducer.levels.jaxpr.as_script import emit
from reducer.levels.jaxpr.level import parse_levels, reduce_traced
from reducer.levels.jaxpr.model import Arg, Spec, Var
from reducer.levels.jaxpr.passes import jaxpr_passes
from reducer.levels.jaxpr.passes.bypass_equations import BypassEquations
from reducer.levels.jaxpr.passes.drop_equations import DropEquations
from reducer.levels.jaxpr.passes.drop_inputs import DropInputs
from reducer.levels.jaxpr.passes.drop_operands import DropOperands
from reducer.levels.jaxpr.passes.drop_outputs import DropOutputs
from reducer.levels.jaxpr.passes.inline_calls import InlineCalls
from reducer.levels.jaxpr.passes.narrow_dtypes import NarrowDtypes
from reducer.levels.jaxpr.passes.promote_to_inputs import PromoteToInputs
from reducer.levels.jaxpr.passes.shrink_dims import ShrinkDims
from reducer.levels.jaxpr.passes.unwrap_control_flow import UnwrapControlFlow
from reducer.workers.sandbox import Limits, Sandbox

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
    spec = jp.parse(program)
    spec.args = [Arg((3, 4), "float32", np.asarray(W).ravel().tolist()),
                 Arg((2, 3), "float32", np.asarray(X).ravel().tolist())]
    got = run_value(spec.to_json())
    np.testing.assert_allclose(got[0], jax.grad(mlp)(W, X), rtol=1e-5)  # argnums=(0,): a tuple
    assert REP.verify(program) and REP.size(program) == jp.count_eqns(spec.jaxpr) + 2 + 2


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
    assert jp.count_eqns(jp.parse(first).jaxpr) < jp.count_eqns(jp.parse(program).jaxpr) / 2 + 1


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
    subprocess.run([sys.executable, "-m", "reducer.levels.jaxpr.capture", str(script), str(out)], cwd=tmp_path,
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


@pytest.mark.slow
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
    text, arrays = emit(jp.parse(program))
    assert "lax.while_loop(" in text and "jax.grad(f, argnums=0)" in text and not arrays
    assert ".bind(" not in text and "jnp.sum(" in text
    script = tmp_path / "repro.py"
    script.write_text(text)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert "Reverse-mode differentiation does not work for lax.while_loop" in done.stderr


def test_emit_writes_large_values_to_npz_and_binds_only_when_asked():
    spec = jp.loads(spec_of(mlp, W, X))
    spec["args"][0]["values"] = list(range(12))
    spec["args"][1]["values"] = [float(v) for v in range(6)]
    text, arrays = emit(Spec.from_data(spec))
    assert "INPUTS = np.load('inputs.npz')" not in text and not arrays  # small: inline
    spec["args"][0] = {"shape": [30, 4], "dtype": "float32", "values": [1.0] * 120}
    text, arrays = emit(Spec.from_data(spec))
    assert "np.load('inputs.npz')" in text and list(arrays) == ["a"]
    bound, _ = emit(jp.parse(spec_of(mlp, W, X)), bind_all=True)
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
    text, _ = emit(jp.parse(program))
    assert "lax.linalg.cholesky(" in text and ".bind(" not in text
    namespace: dict = {}
    exec(compile(text, "repro.py", "exec"), namespace)  # the written script runs as it stands


# -- capture of flat functional programs (issue 4) --------------------------------------------------------
def test_linear_solve_is_encoded_as_its_solve_function():
    a = jnp.array([[2.0, 1.0], [0.5, 3.0]])
    b = jnp.array([1.0, -1.0])
    spec = jp.loads(spec_of(lambda a, b: jnp.sum(jnp.linalg.solve(a, b)), a, b))
    prims = {e["p"] for _, j in jp.jaxprs(spec["jaxpr"]) for e in j["eqns"]}
    assert "custom_linear_solve" not in prims and "lu" in prims
    spec["args"][0]["values"] = np.asarray(a).ravel().tolist()
    spec["args"][1]["values"] = [1.0, -1.0]
    np.testing.assert_allclose(run_value(jp.dumps(spec)), jnp.sum(jnp.linalg.solve(a, b)), rtol=1e-5)


def test_numpy_scalar_parameters_decode_hashable():
    from reducer.levels.jaxpr.params import decode_param

    back = decode_param(encode_param((np.int64(1), 2)))
    assert back == (1, 2) and hash(back) is not None and isinstance(back[0], np.integer)
    assert decode_param(encode_param(np.arange(3))).shape == (3,)


def halve_until_small(x):
    return lax.while_loop(lambda v: jnp.sum(v * v) > 1.0, lambda v: v * 0.5, x)


def test_while_with_a_batched_predicate_runs_and_is_written_back():
    """vmap of a loop whose condition depends on the mapped value leaves a `while` whose condition
    returns one predicate per lane; each lane stops on its own."""
    xs = jnp.array([[0.1, 0.2], [3.0, 4.0], [10.0, 0.0]])
    spec = jp.parse(spec_of(jax.vmap(halve_until_small), xs))
    loop = next(e for e in spec.jaxpr.eqns if e.primitive == "while")
    assert jp.batched_predicate(loop.subs[0])
    spec.args[0].values = np.asarray(xs).ravel().tolist()
    want = jax.vmap(halve_until_small)(xs)
    np.testing.assert_allclose(run_value(spec.to_json()), want, rtol=1e-6)
    text, arrays = emit(spec)
    assert not arrays and "jnp.any(" in text
    printed: list = []
    exec(compile(text, "repro.py", "exec"), {"print": printed.append})  # the script prints its result
    np.testing.assert_allclose(np.asarray(printed[0]), want, rtol=1e-6)


def test_unmask_loops_lets_every_lane_step_while_any_goes_on():
    from reducer.levels.jaxpr.passes.unmask_loops import UnmaskLoops

    xs = jnp.array([[0.1, 0.2], [3.0, 4.0]])
    program = spec_of(jax.vmap(halve_until_small), xs)
    (unmasked,) = candidates(UnmaskLoops(), program)
    assert REP.verify(unmasked) and REP.key(unmasked) < REP.key(program)
    assert not candidates(UnmaskLoops(), unmasked)
    spec = jp.loads(unmasked)
    spec["args"][0]["values"] = np.asarray(xs).ravel().tolist()
    # both lanes halve until the larger one is small: the small lane is halved too often
    np.testing.assert_allclose(run_value(jp.dumps(spec)), xs / 8.0, rtol=1e-6)
    text, _ = emit(Spec.from_data(spec))
    assert "jnp.any(" in text and "jnp.where(" not in text
    printed: list = []
    exec(compile(text, "repro.py", "exec"), {"print": printed.append})
    np.testing.assert_allclose(np.asarray(printed[0]), xs / 8.0, rtol=1e-6)


def test_a_constant_per_lane_predicate_becomes_a_scalar_one():
    from reducer.levels.jaxpr.passes._edit import fill
    from reducer.levels.jaxpr.passes.unmask_loops import UnmaskLoops

    spec = jp.parse(spec_of(jax.vmap(halve_until_small), jnp.ones((3, 2))))
    loop = next(e for e in spec.jaxpr.eqns if e.primitive == "while")
    cond = loop.subs[0]
    cond.eqns.append(fill(Var("never", (3,), "bool")))
    cond.outputs = ["never"]
    program = spec.to_json()
    found = candidates(UnmaskLoops(), program)
    scalar = [c for c in found if not jp.batched_predicate(
        next(e for e in jp.parse(c).jaxpr.eqns if e.primitive == "while").subs[0])]
    assert len(found) == 2 and len(scalar) == 1
    assert REP.verify(scalar[0]) and REP.key(scalar[0]) < REP.key(program)
    np.testing.assert_allclose(run_value(scalar[0]), np.ones((3, 2)))  # the loop never runs
    text, _ = emit(jp.parse(scalar[0]))
    assert "lax.while_loop(cond" in text and "jnp.any(" not in text


def test_merge_inputs_reads_one_input_for_another_of_its_type():
    from reducer.levels.jaxpr.passes.merge_inputs import MergeInputs

    program = spec_of(lambda a, b, c, d: jnp.sum(a * b) + jnp.sum(c) + d, W, W, X, 1.0,
                      transforms=[{"t": "grad", "argnums": [0]}])
    found = candidates(MergeInputs(), program)
    assert len(found) == 1  # b into a; c and d have no twin, a is differentiated
    spec = jp.loads(found[0])
    assert [v[1] for v in spec["jaxpr"]["in"]] == [[3, 4], [2, 3], []]
    assert spec["transforms"] == [{"t": "grad", "argnums": [0]}]
    assert REP.verify(found[0]) and REP.key(found[0]) < REP.key(program)
    np.testing.assert_allclose(run_value(found[0])[0], 2 * np.ones((3, 4)))  # d(sum(a * a))/da at ones
    vmapped = jp.loads(spec_of(lambda a, b: a * b, jnp.ones(2), jnp.ones(2)))
    vmapped["transforms"] = [{"t": "vmap", "in_axes": [0, None]}]
    assert not candidates(MergeInputs(), jp.dumps(vmapped))  # mapped differently


def test_retarget_grads_differentiates_another_input_and_fixes_the_former():
    from reducer.levels.jaxpr.passes.retarget_grads import RetargetGrads

    spec = jp.loads(spec_of(lambda a, b, n: jnp.sum(jnp.sin(a * b)) + n, 2.0, W, 1,
                            transforms=[{"t": "jit"}, {"t": "grad", "argnums": [0]}]))
    spec["args"][0]["values"] = [2.0]
    program = jp.dumps(spec)
    (moved,) = candidates(RetargetGrads(), program)  # to b; n is an integer
    new = jp.loads(moved)
    assert new["transforms"][1] == {"t": "grad", "argnums": [0]} and len(new["jaxpr"]["in"]) == 2
    assert REP.verify(moved) and REP.key(moved) < REP.key(program)
    np.testing.assert_allclose(run_value(moved)[0], 2.0 * np.cos(2.0 * np.ones((3, 4))), rtol=1e-5)  # b: ones
    vmapped = jp.loads(program)
    vmapped["transforms"].append({"t": "vmap", "in_axes": [None, 0, None]})
    assert not candidates(RetargetGrads(), jp.dumps(vmapped))  # the only other float input is mapped


NEWTON = '''
import jax
import jax.numpy as jnp


def solve(w, x):
    def body(state):
        z, it = state
        jac = jax.jacfwd(lambda z: z - jnp.tanh(w @ z + x))(z)
        return z - jnp.linalg.solve(jac, z - jnp.tanh(w @ z + x)), it + 1
    return jax.lax.while_loop(lambda s: (jnp.sum(s[0] ** 2) > 1e-3) & (s[1] < 5), body, (x, 0))[0]


def loss(w, xs):
    return jnp.sum(jax.vmap(lambda x: solve(w, x))(xs))


print(jax.grad(loss)(0.1 * jnp.ones((2, 2)), jnp.ones((3, 2))))
'''


@pytest.mark.slow
def test_capture_of_a_vmapped_newton_solve_reproduces(tmp_path):
    """jnp.linalg.solve (custom_linear_solve) inside a vmapped while under grad: the capture encodes
    it, and the captured program fails as the script does."""
    script = tmp_path / "newton.py"
    script.write_text(NEWTON)
    found = capture(script, tmp_path)
    assert found["error"].startswith("ValueError: Reverse-mode differentiation"), found
    assert found["specs"], found["notes"]
    spec = jp.loads(found["specs"][0])
    assert spec["transforms"] == [{"t": "grad", "argnums": [0]}]
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jp.run(found["specs"][0])


def test_capture_follows_a_failing_pullback(tmp_path):
    script = tmp_path / "pullback.py"
    script.write_text("import jax\nfrom jax import lax\n"
                      "out, back = jax.vjp(lambda x: lax.while_loop(lambda v: v < 5.0, lambda v: v * 2.0, x), 1.0)\n"
                      "print(back(1.0))\n")
    found = capture(script, tmp_path)
    assert found["specs"], found["notes"]
    assert jp.loads(found["specs"][0])["transforms"] == [{"t": "vjp"}]
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jp.run(found["specs"][0])


ENZYME_STEP = '''
import functools
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


@enzyme_jax_ir()
def loss(params, x):
    h = jax.lax.reduce_precision(jnp.tanh(x @ params["w"] + params["b"]), exponent_bits=5, mantissa_bits=10)
    return jnp.sum(h * h)


@functools.partial(jax.jit, donate_argnums=0)
def step(params, x):
    value, grads = jax.value_and_grad(loss)(params, x)
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), value


params, value = step({"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}, jnp.ones((4, 3)))
print(value)
'''


@needs_enzyme
def test_capture_finds_the_enzyme_gradient_inside_a_failing_jit(tmp_path):
    """Enzyme fails while the outer jit compiles: the outer call's jaxpr holds Enzyme's derivative
    (not encodable), so the value_and_grad call made while tracing it is captured, under jit."""
    script = tmp_path / "step.py"
    script.write_text(ENZYME_STEP)
    found = capture(script, tmp_path)
    assert any("Enzyme's derivative" in n for n in found["notes"]), found["notes"]
    chains = [[t["t"] for t in jp.loads(s)["transforms"]] for s in found["specs"]]
    assert ["jit", "value_and_grad", "enzyme"] in chains, chains
    assert len(set(found["specs"])) == len(found["specs"])
    first = found["specs"][chains.index(["jit", "value_and_grad", "enzyme"])]
    with pytest.raises(Exception, match="could not compute the adjoint"):
        jp.run(first)


def test_failures_out_of_the_captures_reach_are_known_in_advance():
    from oracles.base import Signature
    from reducer.levels.jaxpr.traceable import out_of_reach

    def sig(family, **fields):
        return Signature(family, tuple(fields.items()))

    rules = "import jax\nf = jax.custom_jvp(lambda x: x)\nf.defjvp(lambda p, t: (p[0], t[0] * t[0]))\n"
    decorated = "import jax\n@jax.custom_vjp\ndef f(x):\n    return x\n"
    plain = "import jax\nprint(jax.grad(jax.numpy.sin)(1.0))\n"
    # a death by a signal or a hang leaves the call it died in behind (reducer.levels.jaxpr.calls_recorded_ahead)
    assert not out_of_reach(plain, sig("crash", platform="cpu", how="signal", detail="SIGSEGV in x"))
    assert not out_of_reach(plain, sig("crash", platform="cpu", how="hang", detail="timeout"))
    internal = sig("crash", platform="cpu", how="internal-error", detail="AssertionError in jax/_src/ad.py")
    # the script's own rules are kept by the capture (reducer.levels.jaxpr.custom_rules)
    assert not out_of_reach(rules, internal) and not out_of_reach(decorated, internal)
    assert not out_of_reach(rules, sig("activity-mismatch", source="jax", kind="custom-vjp-structure"))
    assert not out_of_reach(plain, internal)  # an internal error elsewhere may well be captured
    assert not out_of_reach(rules, sig("adjoint-missing", source="jax", operation="while"))
    traced_if = sig("jax-error", library="jax", type="TracerBoolConversionError", message="Attempted boolean …")
    assert "Python code on traced values" in out_of_reach(plain, traced_if)
    assert not out_of_reach(rules, sig("crash", platform="cpu", how="xla-status", detail="INTERNAL: x"))
