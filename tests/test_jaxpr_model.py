"""The traced level's typed model (`reducer.levels.jaxpr.model`): real specs come back as exactly the
text they were read from, nothing the JSON carries is lost, and the edits the passes share (walking,
renaming, dead-code removal, copies) do what they say."""
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.codec import Encoder, Unencodable
from reducer.levels.jaxpr.primitives import registry
from reducer.levels.jaxpr.model import Arg, Equation, Jaxpr, Literal, Spec, Transform, Var, dumps
from reducer.levels.jaxpr.params import flat_values
from reducer.levels.jaxpr.probe import Coverage, generate


def spec_text(fun, *args, transforms=(), x64=False) -> str:
    """A spec written as JSON data by hand, as the level wrote them before the model."""
    closed = jax.make_jaxpr(fun)(*args)
    data = {"transforms": list(transforms), "jaxpr": Encoder().closed(closed),
            "args": [{"shape": list(np.shape(a)), "dtype": str(jnp.result_type(a)), "values": flat_values(a)}
                     for a in args]}
    if x64:
        data["x64"] = True
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


def round_trips(text: str) -> Spec:
    spec = Spec.from_json(text)
    assert spec.to_json() == text
    assert Spec.from_data(json.loads(text)).to_data() == json.loads(text)
    return spec


@jax.custom_vjp
def clipped(x):
    return jnp.clip(x, -1.0, 1.0)


clipped.defvjp(lambda x: (clipped(x), (x,)), lambda res, g: (g * (jnp.abs(res[0]) < 1.0),))


@jax.custom_jvp
def softplus(x):
    return jnp.log1p(jnp.exp(x))


softplus.defjvp(lambda primals, tangents: (softplus(primals[0]), tangents[0] * jax.nn.sigmoid(primals[0])))


WEIGHTS = jnp.arange(4.0)


def everything(x, n):
    """Control flow, an inner jit, literals, a public call recorded (`src`), the script's own rules."""
    y = lax.while_loop(lambda c: jnp.sum(c) < 10.0, lambda c: c * 2.0 + 1.0, x)
    z = lax.scan(lambda c, a: (c + a, c * a), 0.0, y)[1]
    w = lax.cond(n > 0, jnp.sin, jnp.cos, z) * WEIGHTS  # an array the function closes over: a constant
    f = jnp.abs(jnp.fft.rfft(w))
    return jnp.sum(jax.jit(lambda v: clipped(v) + softplus(v))(w)) + jnp.sum(f) + jnp.float32(3.0)


def test_real_specs_come_back_as_the_same_text():
    x = jnp.array([0.5, -1.5, 2.0, 0.25])
    text = spec_text(everything, x, jnp.int32(2), transforms=[{"t": "jit"}, {"t": "grad", "argnums": [0]}])
    spec = round_trips(text)
    prims = {e.primitive for _, j in spec.jaxpr.walk() for e in j.eqns}
    assert {"while", "scan", "cond", "jit", "fft", "custom_vjp", "custom_jvp", "__const__"} <= prims, prims
    assert any(e.src == "jnp.fft.rfft" for _, j in spec.jaxpr.walk() for e in j.eqns)
    assert any(isinstance(a, Literal) for _, j in spec.jaxpr.walk() for e in j.eqns for a in e.inputs)
    assert spec.transforms == [Transform("jit"), Transform("grad", argnums=[0])]
    assert spec.args[1] == Arg((), "int32", [2])
    vmapped = spec_text(lambda a, b: a * b, x, x, transforms=[{"t": "vmap", "in_axes": [0, None]},
                                                             {"t": "enzyme", "options": {"argv": ["-O1"]}}])
    assert round_trips(vmapped).transforms[1].options == {"argv": ["-O1"]}
    jax.config.update("jax_enable_x64", True)
    try:
        wide = spec_text(lambda a: jnp.sum(a * 2.0), np.ones(3), x64=True)
    finally:
        jax.config.update("jax_enable_x64", False)
    assert round_trips(wide).x64 and '"float64"' in wide


def test_what_a_worker_request_carries_comes_back_too():
    from reducer.levels.jaxpr import value_checks

    text = spec_text(jnp.sin, jnp.ones(3), transforms=[{"t": "jit"}])
    checked = value_checks.with_check(text, "result", explain=True)
    spec = round_trips(checked)
    assert (spec.check, spec.explain) == ("result", True)
    assert json.loads(checked) == dict(json.loads(text), check="result", explain=True)
    from oracles.outcome import Signature

    wanted = Signature("nonfinite", (("value", "nan"), ("in", "forward"), ("op", "atanh")))
    explained = round_trips(value_checks.with_check(text, "nonfinite", explain=True, wanted=wanted))
    assert explained.checked == "nan"  # what the operation alone is held to: the kinds the program's check read
    assert round_trips(value_checks.with_check(text, "nonfinite", wanted=wanted)).checked == ""


@pytest.mark.slow
def test_every_primitive_a_generated_program_binds_comes_back_as_the_same_text():
    coverage = Coverage(registered=sorted(registry()))
    generate(coverage)
    encoded = 0
    for prim, program in sorted(coverage.found.items()):
        try:
            body = Encoder().closed(program.closed)
        except Unencodable:
            continue
        flat = jax.tree_util.tree_leaves(program.args)
        data = {"transforms": [], "jaxpr": body,
                "args": [{"shape": list(np.shape(a)), "dtype": str(a.dtype), "values": flat_values(a)} for a in flat]}
        round_trips(dumps(data))
        encoded += 1
    assert encoded >= 150


def test_a_field_the_model_does_not_hold_is_refused_not_dropped():
    text = spec_text(jnp.sin, jnp.ones(3))
    for where in ("", "jaxpr", "eqn", "arg"):
        data = json.loads(text)
        target = {"": data, "jaxpr": data["jaxpr"], "eqn": data["jaxpr"]["eqns"][0], "arg": data["args"][0]}[where]
        target["unexpected"] = 1
        with pytest.raises(ValueError, match="unexpected"):
            Spec.from_data(data)


def test_walking_reading_and_editing_a_jaxpr():
    body = Jaxpr([Var("x", (3,), "float32")],
                 [Equation("abs", ["x"], [Var("y", (3,), "float32")]),
                  Equation("sign", ["x"], [Var("unused", (3,), "float32")])], ["y"])
    top = Jaxpr([Var("a", (3,), "float32"), Var("b", (3,), "float32")],
                [Equation("neg", ["a"], [Var("c", (3,), "float32")]),
                 Equation("jit", ["c"], [Var("d", (3,), "float32")], {"name": "f"}, [body]),
                 Equation("mul", ["d", Literal(2.0, "float32")], [Var("e", (3,), "float32")]),
                 Equation("sign", ["b"], [Var("dead", (3,), "float32")])], ["e"])
    spec = Spec([Transform("jit")], top, [Arg((3,), "float32"), Arg((3,), "float32", [1.0, 2.0, 3.0])])
    assert [path for path, _ in top.walk()] == [(), ((1, 0),)] and top.at(((1, 0),)) is body
    assert top.uses() == {"a", "b", "c", "d", "e"} and body.uses() == {"x", "y"}  # nested jaxprs are closed
    assert set(top.variables()) == {"a", "b", "c", "d", "e", "dead"}
    copy = spec.clone()
    copy.jaxpr.rename({"c": "a"})
    copy.jaxpr.dce()
    assert [e.primitive for e in copy.jaxpr.eqns] == ["jit", "mul"] and copy.jaxpr.eqns[0].inputs == ["a"]
    assert [e.primitive for e in copy.jaxpr.eqns[0].subs[0].eqns] == ["abs"]  # dead code goes inside too
    assert [e.primitive for e in top.eqns] == ["neg", "jit", "mul", "sign"] and len(body.eqns) == 2  # unchanged
    assert jp.well_formed(spec) and jp.count_eqns(top) == 6
    assert Spec.from_json(spec.to_json()) == spec == Spec.from_data(spec.to_data())
    assert np.allclose(jp.run(spec.to_json()), 2 * np.ones(3))
