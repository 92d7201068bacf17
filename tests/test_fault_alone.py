"""The operation at fault alone, on the values it got (`reducer.levels.jaxpr.fault_alone`): the
programs a non-finite value's traced level starts from, what the first replay reports of them, and
the written-back call that reads them in place (`nonfinite_replay.inlined`)."""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from reducer.levels.jaxpr import fault_alone
from reducer.levels.jaxpr import nonfinite_replay as nr
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.codec import Encoder
from reducer.levels.jaxpr.primitives import registry
from reducer.levels.jaxpr.model import CALLED, EXPLAINED, Spec
from reducer.levels.jaxpr.params import flat_values

ROOT = Path(__file__).resolve().parent.parent


def spec_of(fun, *args, transforms=()) -> Spec:
    registry()
    closed = jax.make_jaxpr(fun)(*args)
    data = {"transforms": list(transforms), "jaxpr": Encoder().closed(closed),
            "args": [{"shape": list(np.shape(a)), "dtype": str(jnp.asarray(a).dtype), "values": flat_values(a)}
                     for a in args]}
    return jp.parse(jp.dumps(data))


def layer_scale(x):
    std = lax.sqrt(jnp.mean(x * x, axis=-1))
    return jnp.sum(jnp.where(std > 0, 1.0 / jnp.where(std > 0, std, 1.0), 0.0))


def test_the_operation_at_fault_alone_first_at_the_point_its_derivative_is_infinite():
    x = np.array([[1.0, 2.0], [0.0, 0.0], [3.0, 1.0]], np.float32)
    spec = spec_of(layer_scale, x, transforms=[{"t": "value_and_grad", "argnums": [0]}])
    point, whole = list(fault_alone.candidates(spec, {"op": "sqrt", "in": "grad"}, nr.finite))
    assert point.kinds() == ["grad"] and [e.primitive for e in point.jaxpr.eqns] == ["sqrt"]
    assert [(a.shape, a.values) for a in point.args] == [((), [0.0])]
    assert [e.primitive for e in whole.jaxpr.eqns] == ["sqrt", "reduce_sum"]
    assert [(a.shape, a.values) for a in whole.args] == [((3,), [2.5, 0.0, 5.0])]


def test_a_value_made_forward_inside_an_inner_jit_is_found_there():
    spec = spec_of(lambda p: jnp.sum(jax.jit(lax.log)(p)), np.array([0.5, 0.0], np.float32),
                   transforms=[{"t": "grad", "argnums": [0]}])
    first = next(fault_alone.candidates(spec, {"op": "log", "in": "forward"}, nr.finite))
    assert first.kinds() == [] and [e.primitive for e in first.jaxpr.eqns] == ["log"]
    assert [a.values for a in first.args] == [[0.0]]


def test_a_value_made_inside_a_public_call_no_fix_takes_away_starts_from_that_call_alone():
    """`bessel_jn(1.0, v=0)` is NaN in float32, made by the `scan` of its recurrence: the start is the
    call alone on the value it got, not the `scan` taken out of it (a recurrence of the program's own)."""
    spec = spec_of(lambda z: jax.scipy.special.bessel_jn(z * 2.0, v=0)[0] + 1.0, np.float32(0.5))
    fault = {"value": "nan", "in": "forward", "op": "scan", "fix": "none", "from": "bessel_jn"}
    found = list(fault_alone.candidates(spec, fault, nr.finite))
    assert len(found) == 1 and [(e.primitive, e.params.get("name")) for e in found[0].jaxpr.eqns] == [("jit", "bessel_jn")]
    assert [a.values for a in found[0].args] == [[1.0]]
    assert not np.isfinite(jp.build(found[0])[0](*jp.build(found[0])[1])).all()
    # a fix of the program's was found (or the operation is the call): its operation alone, as before
    assert [e.primitive for e in next(fault_alone.candidates(spec, {**fault, "fix": "inner-where"}, nr.finite))
            .jaxpr.eqns] == ["scan"]


def test_a_finite_operation_has_no_point_and_is_tried_whole():
    spec = spec_of(layer_scale, np.ones((2, 2), np.float32), transforms=[{"t": "grad", "argnums": [0]}])
    found = list(fault_alone.candidates(spec, {"op": "sqrt", "in": "grad"}, nr.finite))
    assert len(found) == 1 and found[0].args[0].shape == (2,)


#: the first replay as the traced level's worker runs it: a fresh interpreter, JAX's frames kept
FIRST_REPLAY = """
import sys
from reducer.levels.jaxpr import nonfinite_replay, program, value_checks
spec = open(sys.argv[1]).read()
try:
    value_checks.run_check(program.parse(value_checks.with_check(spec, "nonfinite", explain=True)))
except nonfinite_replay.NonFinite:
    pass
"""


def first_replay(tmp_path, fun, x) -> tuple[Spec, dict]:
    spec = spec_of(fun, x, transforms=[{"t": "value_and_grad", "argnums": [0]}])
    (tmp_path / "spec.json").write_text(spec.to_json())
    out = tmp_path / "harness.json"
    subprocess.run([sys.executable, "-c", FIRST_REPLAY, str(tmp_path / "spec.json")], check=True, timeout=300,
                   cwd=tmp_path, env={**os.environ, "REDUCER_HARNESS_OUT": str(out), "JAX_TRACEBACK_FILTERING": "off",
                                      "PYTHONPATH": str(ROOT)})
    return spec, json.loads(out.read_text())


def root_sum(x):
    return jnp.sum(lax.sqrt(jnp.sum(x, axis=-1)))


def test_the_first_replay_reports_the_operation_alone_and_the_level_starts_there(tmp_path):
    spec, report = first_replay(tmp_path, root_sum, np.array([[1.0, 2.0], [0.0, 0.0]], np.float32))
    found = report["nonfinite"]
    assert (found["value"], found["in"], found["op"]) == ("+inf", "grad", "sqrt")
    alone = jp.parse(report["alone"])
    assert [e.primitive for e in alone.jaxpr.eqns] == ["sqrt"] and alone.args[0].values == [0.0]
    # the seconds it spent explaining are said, so that the level's estimates do not count them as a replay's
    assert report[EXPLAINED] > 0.0 and 0.0 < report[CALLED]  # and the call's own run, without locating its value

    class Run:
        harness = report

    said = []
    assert nr.start(spec.to_json(), Run(), said.append) == report["alone"]
    assert "operation at fault alone" in said[0]
    Run.harness = {"nonfinite": report["nonfinite"]}
    assert nr.start(spec.to_json(), Run(), said.append) == spec.to_json() and len(said) == 1


def test_a_nan_made_of_a_masked_inf_starts_from_the_operation_alone_under_a_where(tmp_path):
    """The `where` of `layer_scale` turns the infinite derivative of `sqrt` into a NaN (inf × 0): the
    operation alone gives the Inf, another kind of value; alone with its value dropped by a `where`
    it gives the NaN, and the level starts there."""
    _, report = first_replay(tmp_path, layer_scale, np.array([[1.0, 2.0], [0.0, 0.0]], np.float32))
    assert (report["nonfinite"]["value"], report["nonfinite"]["in"], report["nonfinite"]["op"]) == ("nan", "grad", "sqrt")
    alone = jp.parse(report["alone"])
    assert [e.primitive for e in alone.jaxpr.eqns] == ["sqrt", "select_n"] and alone.args[0].values == [0.0]


def test_a_division_that_broadcasts_its_denominator_is_tried_at_one_point_masked_first():
    """A pooled ratio `where(den > 0, num / den, 0)` of a (4, 16) sum by its (4, 1) count divides with
    the size-1 axis broadcast by `div` itself: still an operation at each point, tried at the first
    where its derivative is not finite (0 / 0), first under the `where` that masks it."""
    def pool(num, den):
        return jnp.sum(jnp.where(den > 0, num / den, 0.0))

    num, den = np.ones((4, 16), np.float32), np.array([[2.0], [0.0], [1.0], [3.0]], np.float32)
    spec = spec_of(pool, num * den, den, transforms=[{"t": "grad", "argnums": [0, 1]}])
    masked, point, whole = list(fault_alone.candidates(spec, {"op": "div", "in": "grad", "value": "nan"}, nr.finite))
    assert [e.primitive for e in masked.jaxpr.eqns] == ["div", "select_n"]
    assert [e.primitive for e in point.jaxpr.eqns] == ["div"]
    assert [(a.shape, a.values) for a in masked.args] == [((), [0.0]), ((), [0.0])]
    assert [a.shape for a in whole.args] == [(4, 16), (4, 1)]


def squashed_log_prob(mean, actions, advantages):
    """A tanh-squashed policy's log-probability: `arctanh` of the actions at the bounds makes ±Inf,
    and the mean of the advantage-weighted terms adds a +Inf to a -Inf: the checked NaN."""
    z = jnp.arctanh(jnp.clip(actions, -1.0, 1.0)) - mean
    logp = -0.5 * jnp.sum(z ** 2, axis=-1) - jnp.sum(jnp.log(1.0 - actions ** 2 + 1e-6), axis=-1)
    return -jnp.mean(logp * advantages)


def test_a_value_that_turns_into_the_checked_kind_downstream_starts_from_its_flow():
    mean = np.zeros((4, 2), np.float32)
    actions = np.array([[1.0, 0.5], [0.2, 0.1], [1.0, -0.3], [0.0, 0.4]], np.float32)
    spec = spec_of(squashed_log_prob, mean, actions, np.linspace(-1, 1, 4).astype(np.float32),
                   transforms=[{"t": "jit"}, {"t": "value_and_grad", "argnums": [0]}])
    fault = {"op": "atanh", "in": "forward", "value": "nan"}
    *alone, flow = list(fault_alone.candidates(spec, fault, nr.finite))
    assert all([e.primitive for e in c.jaxpr.eqns] == ["atanh"] for c in alone)
    assert [nr.judged(c)["value"] for c in alone] == ["+inf", "+inf"]  # another kind: another failure
    prims = [e.primitive for e in flow.jaxpr.eqns]
    assert prims[0] == "atanh" and prims[-1] == "reduce_sum" and "log" not in prims  # the finite branch is an input
    assert flow.kinds() == ["jit"] and len(flow.args) == len(flow.jaxpr.inputs)
    assert {k: nr.judged(flow)[k] for k in fault} == fault
    replayed = nr.judged(spec)  # the gradients' ±Inf too: the program's check reads the loss's NaN alone
    assert replayed["value"] == "+inf,-inf,nan" and nr.smallest_alone(spec, replayed) is None
    assert nr.smallest_alone(spec, {**replayed, "value": "nan"}) == flow.to_json()
    # the operation's own result of the kind already, or no equation after it making the kind: no flow
    e = next(x for x in spec.jaxpr.eqns if x.primitive == "atanh")
    values = fault_alone.intermediate_values(spec)
    assert fault_alone.flow(spec, (), e, values, "+inf") is None
    assert fault_alone.flow(spec, (), e, values, "-inf,nan,+inf") is None


def glyph_nll(w, x, labels):
    """A classifier's loss on raw 0..255 pixels: the softmax of logits hundreds apart underflows to 0
    in its `exp`, `log` makes the -Inf and the mean negative log-likelihood is +Inf."""
    logp = jnp.log(jax.nn.softmax(x @ w, axis=-1))
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=-1)[:, 0])


def test_a_zero_made_by_an_underflow_starts_from_the_exp_that_made_it():
    x = np.random.default_rng(0).uniform(0, 255, (4, 6)).astype(np.float32)
    w = np.random.default_rng(1).normal(size=(6, 3)).astype(np.float32)
    spec = spec_of(glyph_nll, w, x, np.array([0, 1, 2, 0], np.int32),
                   transforms=[{"t": "jit"}, {"t": "value_and_grad", "argnums": [0]}])
    spec.cause = "exp-underflow"
    found = nr.judged(spec)
    assert (found["op"], found["cause"]) == ("log", "exp-underflow")
    # the `log` of a recorded 0 shows no `exp`: only the flow from the `exp` is tried
    only, = fault_alone.candidates(spec, {**found, "value": "+inf"}, nr.finite)
    prims = [e.primitive for e in only.jaxpr.eqns]
    assert prims[0] == "exp" and "log" in prims and prims[-1] == "neg" and "dot_general" not in prims
    assert nr.smallest_alone(spec, {**found, "value": "+inf"}) is not None  # its replay names the cause too
    spec.cause = found["cause"] = "mul-underflow"  # a cause the flow cannot show: no start
    assert nr.smallest_alone(spec, {**found, "value": "+inf"}) is None


def test_an_overflow_a_stable_formula_fixes_keeps_the_formula():
    """`log1p(exp(z))` written by hand overflows in its `exp`, and `jax.nn.softplus` is its fix: the
    `exp` alone shows the +Inf but no formula to fix, so the level starts from the whole call (a
    start of the `exp` alone lost the fix in every written-back form)."""
    x = np.random.default_rng(0).uniform(0, 255, (4, 6)).astype(np.float32)
    w = np.abs(np.random.default_rng(1).normal(size=(6, 3))).astype(np.float32) * 10
    spec = spec_of(lambda w, x: jnp.mean(jnp.log1p(jnp.exp(x @ w))), w, x,
                   transforms=[{"t": "jit"}, {"t": "value_and_grad", "argnums": [0]}])
    found = nr.judged(spec)
    assert (found["op"], found["fix"]) == ("exp", "softplus")
    assert all(nr.judged(c).get("fix") is None for c in fault_alone.candidates(spec, found, nr.finite))
    assert nr.smallest_alone(spec, {**found, "value": "+inf"}) is None


def test_names_only_the_call_reads_are_read_in_place():
    spec = jp.parse(jp.dumps({"transforms": [{"t": "grad", "argnums": [0]}], "args": [{"shape": [], "dtype": "float32"}],
                              "jaxpr": {"in": [["a", [], "float32"]], "eqns": [], "out": ["a"]}}))
    lines = ["import jax", "from jax import lax", "f = lax.sqrt", "a = jnp.float32(0.0)", "b = jnp.ones(3)",
             "c = jnp.ones((), jnp.float32)", "def h(a):", "    return a * b"]
    kept, got = nr.inlined(lines, "jax.grad(f)(a) + jax.grad(f)(c)", spec)
    assert got == "jax.grad(lax.sqrt)(0.0) + jax.grad(lax.sqrt)(1.0)"
    assert kept == ["import jax", "from jax import lax", "b = jnp.ones(3)", "def h(a):", "    return a * b"]
    kept, got = nr.inlined(lines, "jax.grad(h)(b)", spec)  # `b` is read inside `h`: it stays
    assert got == "jax.grad(h)(b)" and "b = jnp.ones(3)" in kept
    ast.parse("\n".join(kept))
    kept, got = nr.inlined(lines, "h(a)", spec)  # a number given to the script's own function stays a Python number
    assert got == "h(a)" and "a = jnp.float32(0.0)" in kept
