"""Traced-level passes that reach past shape changes, and compact write-back of what library code
lowers to (cumulative reductions, custom differentiation rules)."""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.codec import Encoder
from reducer.levels.jaxpr.passes import jaxpr_passes
from reducer.levels.jaxpr.passes.reshape_bypass import ReshapeBypass

REP = jp.JaxprSpec()


def spec_of(fun, *args, transforms=(), values=False):
    """The spec of `fun` on `args`, called on ones, or with `values` on `args` themselves."""
    from reducer.levels.jaxpr.params import flat_values

    closed = jax.make_jaxpr(fun)(*args)
    return jp.dumps({"transforms": list(transforms), "jaxpr": Encoder().closed(closed),
                     "args": [{"shape": list(np.shape(a)), "dtype": str(jnp.result_type(a)),
                               **({"values": flat_values(a)} if values else {})} for a in args]})


def picked(x):
    """The shape of jnp.linalg.eigh(...)[0][7] in a model's loss: a slice and a squeeze to a scalar."""
    return lax.squeeze(lax.slice(jnp.sin(x), (7,), (8,)), (0,))


def test_reshape_bypass_sums_an_earlier_value_past_a_slice_and_squeeze():
    program = spec_of(picked, jnp.linspace(0.0, 1.0, 8), transforms=[{"t": "grad", "argnums": [0]}])
    found = list(ReshapeBypass().candidates(program))
    assert found
    best = found[0]  # the nearest earlier value first: sin(x), past the slice
    prims = [e["p"] for e in jp.loads(best)["jaxpr"]["eqns"]]
    assert prims == ["sin", "reduce_sum"], prims
    assert [e["p"] for e in jp.loads(found[-1])["jaxpr"]["eqns"]] == ["reduce_sum"]  # the input itself
    assert REP.key(best) < REP.key(program) and REP.verify(best)
    np.testing.assert_allclose(np.asarray(jp.run(best)[0]), np.full(8, np.cos(1.0)), rtol=1e-6)  # inputs run as ones


def test_reshape_bypass_reshapes_values_of_the_same_size():
    program = spec_of(lambda x: jnp.cos(jnp.transpose(jnp.sin(x))).reshape(6), jnp.ones((2, 3)))
    found = list(ReshapeBypass().candidates(program))
    shapes = [[e["p"] for e in jp.loads(c)["jaxpr"]["eqns"]] for c in found]
    assert ["sin", "reshape"] in shapes, shapes


def test_reshape_bypass_is_registered_after_bypass_equations():
    names = [p.name for p in jaxpr_passes()]
    assert names.index("reshape-bypass") == names.index("bypass-equations") + 1


# -- the script's own custom rules --------------------------------------------------------------
def bad_structure():
    f = jax.custom_vjp(lambda x, y: x * y)
    f.defvjp(lambda x, y: (x * y, (x, jnp.sin(y))), lambda res, g: (g * res[1],))  # one cotangent for two
    return f


def squared_tangent():
    f = jax.custom_jvp(lambda x: jnp.tanh(x) * 3.0)
    f.defjvp(lambda p, t: (f(p[0]), t[0] * t[0]))  # the rule calls its own function, and is not linear
    return f


def vmapped_weights():
    """A model's quantised weights under `jax.vmap(model)(x)` (as in an Equinox classifier): the
    rule's values are not batched, but `vmap` wraps its backward rule."""
    f = bad_structure()
    return lambda w, s: jnp.sum(jax.vmap(lambda x: f(w, s) * x)(jnp.arange(3.0)))


def failure_of(fun, *args) -> str:
    try:
        jax.grad(fun)(*args)
    except Exception as exc:  # the failure JAX meets in differentiating through the rules
        return f"{type(exc).__name__}: {str(exc).replace('~', '')[:20]}"  # weak types aside
    return ""


@pytest.mark.slow
def test_own_custom_rules_are_kept_and_fail_the_same_way_when_run_and_written_back(tmp_path):
    import subprocess
    import sys

    from reducer.levels.jaxpr.as_script import emit

    for make, args in ((bad_structure, (1.0, 2.0)), (squared_tangent, (0.5,)), (vmapped_weights, (1.0, 2.0))):
        fun = make()
        expected = failure_of(fun, *args)
        assert expected
        program = spec_of(fun, *args, transforms=[{"t": "grad", "argnums": [0]}])
        kinds = {e["p"] for _, j in jp.jaxprs(jp.loads(program)["jaxpr"]) for e in j["eqns"]}
        assert kinds & {"custom_vjp", "custom_jvp"} and not kinds & {"custom_vjp_call", "custom_jvp_call"}
        assert failure_of(lambda *xs: jp.run(program), *args) == expected
        text, _ = emit(jp.parse(program))
        assert "jax.custom_" in text
        assert not re.search(r"return \w+,$", text, re.M)  # one result is one value, as users write it
        (tmp_path / "repro.py").write_text(text)
        done = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode != 0 and expected.replace(": ", ": (").split("(")[0] in done.stderr, done.stderr[-500:]


def test_library_rules_are_inlined_and_inline_calls_drops_own_rules():
    from reducer.levels.jaxpr.passes.inline_calls import InlineCalls

    relu = spec_of(lambda x: jnp.sum(jax.nn.relu(x)), jnp.ones(3))
    assert "custom_jvp" not in {e["p"] for e in jp.loads(relu)["jaxpr"]["eqns"]}
    fun = squared_tangent()
    program = spec_of(lambda x: fun(x) + 1.0, 0.5)
    (inlined,) = list(InlineCalls().candidates(program))
    assert [e["p"] for e in jp.loads(inlined)["jaxpr"]["eqns"]] == ["tanh", "mul", "add"]


def test_promoting_an_equation_drops_the_inputs_only_it_read():
    from reducer.levels.jaxpr.passes.promote_to_inputs import PromoteToInputs

    program = spec_of(lambda x, w: jnp.sum(jnp.cos(x) * jnp.sin(w @ x)), jnp.ones(3), jnp.ones((3, 3)),
                      transforms=[{"t": "grad", "argnums": [0, 1]}])
    shrunk = [jp.loads(c) for c in PromoteToInputs().candidates(program)]
    # promoting `w @ x` leaves `w` unread: it goes with the equation, and grad follows the positions
    promoted = next(s for s in shrunk if [e["p"] for e in s["jaxpr"]["eqns"]] == ["cos", "sin", "mul", "reduce_sum"])
    assert [a["shape"] for a in promoted["args"]] == [[3], [3]]
    assert promoted["transforms"][0]["argnums"] == [0]
    assert REP.verify(jp.dumps(promoted))


def test_cumulative_products_are_written_as_their_jax_numpy_call(tmp_path):
    from reducer.levels.jaxpr.as_script import emit

    program = spec_of(lambda x: jnp.sum(jnp.cumsum(jnp.cumprod(x, axis=1), axis=0)), jnp.ones((2, 3)))
    text, _ = emit(jp.parse(program))
    assert ", axis=1)" in text and "jnp.cumprod(" in text
    assert "jnp.cumsum(" in text and "def inner" not in text
    scope = {}
    exec(compile(text.replace("print(", "result = ("), "repro", "exec"), scope)
    np.testing.assert_allclose(np.asarray(scope["result"]), 9.0)  # ones: cumprod 1s, cumsum [1,1,1],[2,2,2]


def test_a_where_that_vmap_broadcasts_along_the_batch_is_not_written_as_numpys_broadcasting():
    """`jnp.where(m, h, 0.0)` of a mask per example under `vmap` broadcasts the batched mask along the
    first axis; `jnp.where` of the batched operands would align it with the last (and fail): the
    written-back script spells the broadcast out."""
    from reducer.levels.jaxpr.as_script import emit

    batched = spec_of(jax.vmap(lambda m, h: jnp.where(m, h, 0.0)), jnp.array([True, False, True]), jnp.ones((3, 2)),
                      values=True)
    text, _ = emit(jp.parse(batched))
    scope = {}
    exec(compile(text.replace("print(", "result = ("), "repro", "exec"), scope)
    np.testing.assert_allclose(np.asarray(scope["result"]), [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]])


def test_isolate_equation_keeps_one_distinctive_equation_alone():
    from reducer.levels.jaxpr.passes.isolate_equation import IsolateEquation

    def model(w, x):
        h = jnp.tanh(x @ w)
        return jnp.sum(jnp.cumprod(jax.nn.sigmoid(h), axis=1) * h) + jnp.sum(jnp.sort(h))

    program = spec_of(model, jnp.ones((3, 4)) * 0.1, jnp.ones((2, 3)), transforms=[{"t": "grad", "argnums": [0]}])
    found = [jp.loads(c) for c in IsolateEquation().candidates(program)]
    shapes = {tuple(e["p"] for _, j in jp.jaxprs(s["jaxpr"]) for e in j["eqns"]) for s in found}
    assert ("jit", "cumprod", "reduce_sum") in shapes or ("cumprod", "reduce_sum") in shapes, shapes
    assert ("sort", "reduce_sum") in shapes, shapes
    for s in found:
        text = jp.dumps(s)
        assert REP.verify(text) and REP.key(text) < REP.key(program)
        assert s["transforms"][0]["argnums"] == [0] and s["args"] == [{"shape": [2, 4], "dtype": "float32"}]
        np.testing.assert_allclose(np.asarray(jp.run(text)[0]).shape, (2, 4))


def test_isolate_equation_keeps_a_named_public_call_alone_on_the_values_it_was_given():
    """`jnp.linalg.norm` of rows of which one is zero: a value failure made at a point (the norm's
    NaN gradient at 0), which the call alone on ones would lose; jax.numpy's private helpers
    (`_where`) are not offered."""
    from reducer.levels.jaxpr.passes.isolate_equation import IsolateEquation

    def model(z, p):
        d = jnp.linalg.norm(z - z[p], axis=-1)
        return jnp.mean(jnp.where(d > 1.0, d, 1.0))

    z = jnp.arange(6.0).reshape(3, 2)
    program = spec_of(model, z, jnp.array([0, 2, 2]), transforms=[{"t": "grad", "argnums": [0]}], values=True)
    parsed = jp.parse(program)
    named = [s for s in (jp.loads(c) for c in IsolateEquation(jp.recorded(parsed)).candidates(program))
             if s["jaxpr"]["eqns"][0]["p"] == "jit"]
    assert [s["jaxpr"]["eqns"][0]["params"]["name"] for s in named] == ["norm"]
    (arg,) = named[0]["args"]
    np.testing.assert_allclose(np.reshape(arg["values"], (3, 2)), z - z[jnp.array([0, 2, 2])])
    gradient = np.asarray(jp.run(jp.dumps(named[0]))[0])
    assert np.isnan(gradient[[0, 2]]).all() and np.isfinite(gradient[1]).all()  # rows 0 and 2 are zero
    assert not [s for s in (jp.loads(c) for c in IsolateEquation().candidates(program))
                if s["jaxpr"]["eqns"][0]["p"] == "jit" and "values" in s["args"][0]]


def test_a_platform_dependent_cond_keeps_its_platforms_through_encoding_running_and_write_back():
    from reducer.levels.jaxpr.as_script import emit

    def fun(x):
        return jnp.sum(lax.platform_dependent(x, cpu=jnp.sin, default=jnp.cos))

    program = spec_of(fun, jnp.ones(3))
    (cond,) = [e for e in jp.loads(program)["jaxpr"]["eqns"] if e["p"] == "cond"]
    assert cond["params"]["branches_platforms"]
    np.testing.assert_allclose(np.asarray(jp.run(program)), 3 * np.sin(1.0), rtol=1e-6)
    text, _ = emit(jp.parse(program))
    assert "lax.platform_dependent(" in text and "cpu=branch" in text and "default=branch" in text
    scope = {}
    exec(compile(text.replace("print(", "result = ("), "repro", "exec"), scope)
    np.testing.assert_allclose(np.asarray(scope["result"]), 3 * np.sin(1.0), rtol=1e-6)


def test_an_inner_jit_of_one_result_returns_that_value_and_the_script_runs():
    from reducer.levels.jaxpr.as_script import emit

    program = spec_of(lambda x: jax.jit(lambda y: jnp.sin(y) * 2.0)(x) + jax.jit(lambda y: (y, y + 1))(x)[1], 0.5)
    text, _ = emit(jp.parse(program), bind_all=True)
    assert not re.search(r"return \w+,$", text, re.M) and "return " in text, text
    namespace = {}
    exec(compile(text.replace("print(", "result = ("), "repro.py", "exec"), namespace)
    np.testing.assert_allclose(namespace["result"], np.sin(1.0) * 2.0 + 2.0, rtol=1e-6)  # written back on ones


def test_a_loop_carrying_one_value_carries_it_itself_and_computes_what_the_program_did():
    from reducer.levels.jaxpr.as_script import emit

    def halve(x):
        return lax.while_loop(lambda c: jnp.sum(c) > 1.0, lambda c: c * 0.5, x)

    def pair(x):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))[1]

    for fun in (halve, pair):
        program = spec_of(fun, jnp.full(3, 4.0))
        text, _ = emit(jp.parse(program))
        namespace = {}
        exec(compile(text.replace("print(", "(lambda *a: None)("), "repro.py", "exec"), namespace)
        got = namespace["f"](jnp.full(3, 4.0))
        np.testing.assert_allclose(np.asarray(got), np.asarray(fun(jnp.full(3, 4.0))))
        if fun is halve:
            assert not re.search(r"while_loop\(.*\(\w+,\)\)", text) and "= carry" not in text, text


def test_a_filled_value_is_spelled_as_a_user_writes_it():
    from reducer.levels.jaxpr.spelling import filled

    assert (filled((), "bool", 0), filled((), "bool", 1)) == ("False", "True")  # a mask of one value
    assert filled((2,), "bool", 0) == "jnp.zeros((2,), jnp.bool_)" and filled((), "float32", 1) == "jnp.ones((), jnp.float32)"
    assert float(jax.grad(lambda a: jnp.where(eval(filled((), "bool", 0)), jnp.log(a), 1.0))(2.0)) == 0.0


def test_float32_spelled_as_the_default_float_is_float64_once_the_script_is_made_float64():
    """The written-back form held to the float64 fix of an overflow: its values take the program's
    floating type, so that the fix widens them as it widened the program's."""
    from reducer.levels.jaxpr.as_script import emit
    from reducer.levels.jaxpr.spelling import default_float

    spec = jp.parse(spec_of(lambda x: jnp.exp(x * 2.0), jnp.asarray([157.0, 1.0], jnp.float32), values=True))
    plain, _ = emit(spec)
    with default_float():
        text, arrays = emit(spec)
    assert "jnp.float32" in plain and "jnp.float32" not in text and "float)" in text and not arrays, text
    body = text.replace("print(", "out = (")
    scope = {}
    exec(compile(body, "repro.py", "exec"), scope)
    assert scope["out"].dtype == jnp.float32 and not jnp.isfinite(scope["out"]).all()
    with jax.enable_x64(True):
        scope = {}
        exec(compile(body, "repro.py", "exec"), scope)
        assert scope["out"].dtype == jnp.float64 and jnp.isfinite(scope["out"]).all()


@pytest.mark.parametrize("fun", [lambda a: a ** 0.5, lambda a: 2.0 ** a, lambda a: (-a) ** 0.5,
                                 lambda a: a ** a])
def test_a_power_is_written_as_the_users_operator_and_stages_the_same_primitive(fun):
    """`(r * r) ** 0.5` in a loss is `r ** 0.5` in the reproducer, not `lax.pow`, and means the same."""
    from reducer.levels.jaxpr.as_script import emit

    x = jnp.asarray([4.0, 0.0, 2.0], jnp.float32)
    spec = jp.parse(spec_of(fun, x, values=True))
    text, _ = emit(spec)
    assert "pow(" not in text and " ** " in text, text
    scope = {}
    exec(compile(text.replace("print(", "out = ("), "repro.py", "exec"), scope)
    np.testing.assert_array_equal(np.asarray(scope["out"]), np.asarray(fun(x)))
    assert "pow" in {e.primitive.name for e in jax.make_jaxpr(scope["f"])(x).eqns}
