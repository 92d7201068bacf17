"""Non-finite values at the traced level (`reducer.levels.jaxpr.nonfinite_replay`): a replayed call
whose result holds a NaN or an Inf fails, and names the operation at fault as the program's own run
would; the calls made inside a traced one are replayed on the values they got
(`reducer.levels.jaxpr.calls_recorded_ahead`); the written-back script ends in the program's kind of check; and a
training script whose own check fires on a NaN gradient reduces through the traced level."""
import json
import math
import os
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from oracles.outcome import RunResult, Signature
from oracles.own_check import OwnCheck
from reducer.levels.jaxpr import nonfinite_replay as nr
from reducer.levels.jaxpr import as_users_write, replay_order, value_checks
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.codec import Encoder
from reducer.levels.jaxpr.primitives import registry
from reducer.levels.jaxpr.model import CALLED
from reducer.levels.jaxpr.params import flat_values

WANTED = Signature("nonfinite", (("type", "AssertionError"), ("check", "assert"), ("in", "grad"), ("op", "sqrt"),
                                 ("from", "norm")), "A non-finite value from `sqrt` (through `norm`) under `grad`")


def spec_of(fun, *args, transforms=()):
    closed = jax.make_jaxpr(fun)(*args)
    return {"transforms": list(transforms), "jaxpr": Encoder().closed(closed),
            "args": [{"shape": list(np.shape(a)), "dtype": str(jnp.asarray(a).dtype), "values": flat_values(a)}
                     for a in jax.tree_util.tree_leaves(args)]}


def replay(spec: dict, tmp_path, monkeypatch) -> tuple[BaseException | None, dict]:
    registry()
    out = tmp_path / "harness.json"
    monkeypatch.setenv("REDUCER_HARNESS_OUT", str(out))
    raised = None
    try:
        value_checks.run_check(jp.parse(value_checks.with_check(jp.dumps(spec), "nonfinite")))
    except nr.NonFinite as exc:
        raised = exc
    return raised, json.loads(out.read_text())


def masked_sqrt(a):
    return jnp.where(a > 0, lax.sqrt(a), 0.0)


def test_a_nan_gradient_is_located_at_the_derivative_of_sqrt(tmp_path, monkeypatch):
    spec = spec_of(masked_sqrt, np.float32(0.0), transforms=[{"t": "grad", "argnums": [0]}])
    raised, report = replay(spec, tmp_path, monkeypatch)
    assert raised is not None and report["program"]["exit"] == 1
    found = report["nonfinite"]
    assert (found["in"], found["op"]) == ("grad", "sqrt"), found
    run = RunResult(1, "", "", 1.0, harness=report)
    assert nr.same(WANTED, run)[0]
    assert not nr.same(Signature("nonfinite", (("in", "forward"), ("op", "sqrt"))), run)[0]
    assert "in=grad op=sqrt" in value_checks.fault_line(run)


def test_a_sqrt_outside_its_domain_is_not_one_at_its_edge(tmp_path, monkeypatch):
    """At 0 the masked `sqrt` is finite and its derivative is not (`point=edge`); at -1 its value is NaN
    (`point=outside`): the same operation, transformation and kind, another failure."""
    wanted = Signature("nonfinite", (("value", "nan"), ("in", "grad"), ("op", "sqrt"), ("point", "edge")))
    grad = [{"t": "grad", "argnums": [0]}]
    runs = [RunResult(1, "", "", 1.0, harness=replay(spec_of(masked_sqrt, np.float32(x), transforms=grad), tmp_path,
                                                    monkeypatch)[1]) for x in (0.0, -1.0)]
    assert [r.harness["nonfinite"].get("point") for r in runs] == ["edge", "outside"]
    assert [nr.same(wanted, r)[0] for r in runs] == [True, False]
    # a replay whose outputs no one class's fix clears names no class: held to the rest (the job's
    # origin holds the written-back script to the class)
    unnamed = RunResult(1, "", "", 1.0, harness={**runs[0].harness, "nonfinite": {
        k: v for k, v in runs[0].harness["nonfinite"].items() if k != "point"}})
    assert nr.same(wanted, unnamed)[0]


def test_a_forward_nan_beside_the_gradients_is_not_the_where_traps_gradient_nan(tmp_path, monkeypatch):
    """The `where` dropped, `a * log(a)` at 0 still has a NaN gradient made by `log`, but the checked
    forward value is NaN too: the forward fix takes some of the values away, not none."""
    grad = [{"t": "value_and_grad", "argnums": [0]}]
    trap = spec_of(lambda a: jnp.where(a > 0, a * jnp.log(a), 0.0), np.float32(0.0), transforms=grad)
    dropped = spec_of(lambda a: a * jnp.log(a), np.float32(0.0), transforms=grad)
    found = [replay(spec, tmp_path, monkeypatch)[1]["nonfinite"] for spec in (trap, dropped)]
    assert [(f["in"], f["op"], f["value"]) for f in found] == [("grad", "log", "nan"), ("forward,grad", "log", "nan")]


def test_a_value_made_forward_is_told_by_its_own_kind_not_its_derivatives(tmp_path, monkeypatch):
    """`value_and_grad(log)(0)` reads `-inf` forward beside the derivative's `+inf`: the value made
    forward is the `-inf`, not a `+inf` as `-log(0)` makes."""
    grad = [{"t": "value_and_grad", "argnums": [0]}]
    found = [replay(spec_of(f, np.float32(0.0), transforms=grad), tmp_path, monkeypatch)[1]["nonfinite"]
             for f in (jnp.log, lambda x: -jnp.log(x))]
    assert [(f["in"], f["op"], f["value"]) for f in found] == [("forward", "log", "-inf"), ("forward", "log", "+inf")]


def test_an_array_becomes_a_scalar_at_the_value_that_tells(tmp_path, monkeypatch):
    """A padded slot's zero is not the array's first value: `one-point` tries the value that tells
    after the first one, so the masked `sqrt`'s NaN gradient survives the array becoming a scalar."""
    from reducer.levels.jaxpr.passes.one_point import OnePoint

    spec = spec_of(lambda a: jnp.sum(masked_sqrt(jnp.squeeze(a.reshape(3, 1), 1))),
                   np.array([0.5, 2.0, 0.0], np.float32), transforms=[{"t": "grad", "argnums": [0]}])
    first, telling, *_ = (jp.loads(c) for c in OnePoint().candidates(jp.dumps(spec)))
    assert not {"squeeze", "reduce_sum"} & {e["p"] for e in telling["jaxpr"]["eqns"]}  # a scalar's are gone
    assert (first["args"][0]["values"], telling["args"][0]["values"]) == ([0.5], [0.0])
    assert replay(first, tmp_path, monkeypatch)[0] is None  # at its first value the gradient is finite
    raised, report = replay(telling, tmp_path, monkeypatch)
    assert raised is not None and (report["nonfinite"]["in"], report["nonfinite"]["op"]) == ("grad", "sqrt")
    # a mask and the values it masks are cut at one position: the padded slot's False with its 0.0
    paired = spec_of(lambda m, x: jnp.sum(jnp.where(m, jnp.sqrt(x), 1.0)), np.array([True, False]),
                     np.array([0.5, 0.0], np.float32), transforms=[{"t": "grad", "argnums": [1]}])
    telling = jp.loads(list(OnePoint().candidates(jp.dumps(paired)))[1])
    assert [a["values"] for a in telling["args"]] == [[False], [0.0]]
    raised, report = replay(telling, tmp_path, monkeypatch)
    assert raised is not None and report["nonfinite"]["value"] == "nan"


def test_an_array_picked_by_a_gather_becomes_a_scalar_at_the_position_it_picks(tmp_path, monkeypatch):
    """A tempered softmax's `log` of the one `exp` that underflowed, picked by a `gather` (an unseen
    Equinox program): the telling value (a zero, the largest) is not the one picked, so the small
    array is cut at each position in turn, and the `gather` of what is now a scalar goes."""
    from reducer.levels.jaxpr.passes.one_point import OnePoint

    x = np.array([0.0, 0.0, 0.0, 0.0, -291.5, 0.0, 449.1, 801.7, 786.9, 728.6, 0.0, 74.2], np.float32)
    spec = spec_of(lambda a: jnp.log(jnp.sum(jnp.exp(a).reshape(1, 4, 3), axis=0)[1, 1]), x)  # op by op: XLA
    # folds `log(exp(a))` to `a` under `jit`
    assert replay(spec, tmp_path, monkeypatch)[0] is not None
    found = [jp.loads(c) for c in OnePoint().candidates(jp.dumps(spec))]
    at = [c for c in found if c["args"][0]["values"] == [-291.5]]
    assert at and [e["p"] for e in at[0]["jaxpr"]["eqns"]] == ["exp", "log"], at
    raised, report = replay(at[0], tmp_path, monkeypatch)
    assert raised is not None and (report["nonfinite"]["op"], report["nonfinite"]["cause"]) == ("log", "exp-underflow")


def test_paired_arrays_are_cut_first_where_their_values_tell_together(tmp_path, monkeypatch):
    """A cross-entropy's labels and logits: the NaN is `0 * log(1 / (1 + exp(z)))` where a label is 0
    and its logit overflows `exp`; the first zero label (the telling value) has a small logit."""
    from reducer.levels.jaxpr.passes.one_point import OnePoint, positions

    y = np.array([1.0, 0.0, 1.0, 0.0, 0.0, 1.0], np.float32)
    z = np.array([-300.0, 2.0, 5.0, 150.0, 150.0, 1.0], np.float32)
    spec = spec_of(lambda a, b: jnp.sum(a * jnp.log(1.0 / (1.0 + jnp.exp(b)))), y, z)
    assert positions(jp.parse(jp.dumps(spec)).args)[:2] == [3, 1]  # a zero label: the largest logit first, once
    found = [jp.loads(c) for c in OnePoint().candidates(jp.dumps(spec))]
    at = [c for c in found if [a["values"] for a in c["args"]] == [[0.0], [150.0]]]
    assert at, found
    raised, report = replay(at[0], tmp_path, monkeypatch)
    assert raised is not None and report["nonfinite"]["value"] == "nan"


def test_a_dimension_shrinks_to_the_slice_that_holds_the_telling_value(tmp_path, monkeypatch):
    """`shrink-dims` cuts an input's recorded values with its shape, keeping the padded row's zeros."""
    from reducer.levels.jaxpr.passes.shrink_dims import ShrinkDims

    rows = np.ones((4, 3), np.float32)
    rows[2] = 0.0  # a padded row: its norm is 0, the gradient of its sqrt is NaN through the mask
    spec = spec_of(lambda a: jnp.sum(masked_sqrt(jnp.sum(a * a, axis=1))), rows,
                   transforms=[{"t": "grad", "argnums": [0]}])
    one = jp.loads(next(iter(ShrinkDims().candidates(jp.dumps(spec)))))  # 4 -> 1 first, the largest size
    assert one["args"][0]["shape"] == [1, 3] and one["args"][0]["values"] == [0.0, 0.0, 0.0]
    raised, report = replay(one, tmp_path, monkeypatch)
    assert raised is not None and (report["nonfinite"]["in"], report["nonfinite"]["op"]) == ("grad", "sqrt")


def test_a_cut_keeps_the_values_it_makes_inputs_and_differentiates_at_the_cut(tmp_path, monkeypatch):
    """`promote-to-inputs` with the values the captured call recorded: the probabilities (a zero among
    them) become the input, the gradient is taken with respect to them, and the `where` trap's NaN
    stays; the same cut built as ones loses it."""
    from reducer.engine import Chunk
    from reducer.levels.jaxpr.passes.promote_to_inputs import PromoteToInputs

    def entropy(w):
        p = jnp.maximum(w * 2.0, 0.0)
        return jnp.sum(jnp.where(p > 0, p * jnp.log(p), 0.0))

    spec = spec_of(entropy, np.array([0.5, -1.0, 0.3], np.float32), transforms=[{"t": "grad", "argnums": [0]}])
    model = jp.parse(jp.dumps(spec))
    recorded = jp.recorded(model)
    assert recorded and all(len(v) in (1, 3) for v in recorded.values())
    cut = Chunk(tuple(range(2)), 0, 2)  # the `mul` and the `max`: what computes the probabilities
    kept = jp.loads(PromoteToInputs(recorded).apply(model, cut))
    assert kept["args"] == [{"shape": [3], "dtype": "float32", "values": [1.0, 0.0, 0.6000000238418579]}]
    assert kept["transforms"][0]["argnums"] == [0]  # differentiated at the cut, the weights gone
    raised, report = replay(kept, tmp_path, monkeypatch)
    assert raised is not None and (report["nonfinite"]["in"], report["nonfinite"]["op"]) == ("grad", "log")
    ones = jp.loads(PromoteToInputs().apply(model, cut))
    assert "values" not in ones["args"][-1] and replay(ones, tmp_path, monkeypatch)[0] is None
    # the level's first replay of the captured call (`explain`) is what records them
    monkeypatch.setenv("REDUCER_HARNESS_OUT", str(tmp_path / "first.json"))
    with pytest.raises(nr.NonFinite):
        value_checks.run_check(jp.parse(value_checks.with_check(jp.dumps(spec), "nonfinite", True)))
    first = json.loads((tmp_path / "first.json").read_text())["recorded"]
    assert json.dumps(first, sort_keys=True) == json.dumps(recorded, sort_keys=True)  # NaN included


def test_a_log_of_zero_in_the_forward_computation(tmp_path, monkeypatch):
    spec = spec_of(lambda p: jnp.sum(jnp.log(p)), np.zeros(3, np.float32), transforms=[{"t": "jit"}])
    raised, report = replay(spec, tmp_path, monkeypatch)
    assert raised is not None
    assert (report["nonfinite"]["in"], report["nonfinite"]["op"]) == ("forward", "log"), report


def test_a_log_of_a_sum_of_exps_that_all_underflowed_names_the_formula_that_fixes_it(tmp_path, monkeypatch):
    """`log` makes the Inf (its inner `where` takes it away), and `jax.nn.logsumexp` in place of the
    formula written back one operation a line does too: a job whose origin is `fix=logsumexp` holds
    the replay to both."""
    spec = spec_of(lambda z: -jnp.log(jnp.sum(jnp.exp(z))), np.array([-2000.0, -2100.0], np.float32),
                   transforms=[{"t": "jit"}])
    raised, report = replay(spec, tmp_path, monkeypatch)
    assert raised is not None
    found = report["nonfinite"]
    assert (found["in"], found["op"], found.get("fix")) == ("forward", "log", "logsumexp"), found
    run = RunResult(1, "", "", 1.0, harness=report)
    wanted = Signature("nonfinite", (("value", "+inf"), ("in", "forward"), ("op", "log"), ("fix", "logsumexp")))
    assert nr.same(wanted, run)[0]
    assert not nr.same(Signature("nonfinite", (("value", "+inf"), ("in", "forward"), ("op", "log"),
                                                ("fix", "softplus"))), run)[0]
    alone = spec_of(lambda z: -jnp.log(jnp.exp(z)), np.float32(-2000.0), transforms=[{"t": "jit"}])
    assert not nr.same(wanted, RunResult(1, "", "", 1.0, harness=replay(alone, tmp_path, monkeypatch)[1]))[0]


def test_a_log_of_an_underflowed_softmax_keeps_the_underflow_that_made_its_zero(tmp_path, monkeypatch):
    """A cut that makes the softmax's 0 an input keeps the `log` of 0 but not the underflow that made
    it: the job's origin says `cause=exp-underflow`, and its written-back script would show `none`
    (an unseen Equinox program's tempered softmax: every written-back form failed)."""
    soft = spec_of(lambda s: -jnp.log(jax.nn.softmax(s / 0.01)[0]), np.array([0.0, 2.0], np.float32),
                   transforms=[{"t": "jit"}])
    raised, report = replay(soft, tmp_path, monkeypatch)
    assert raised is not None and report["nonfinite"].get("cause") == "exp-underflow", report["nonfinite"]
    wanted = Signature("nonfinite", (("value", "+inf"), ("in", "forward"), ("op", "log"), ("cause", "exp-underflow"),
                                     ("fix", "inner-where")))
    assert nr.same(wanted, RunResult(1, "", "", 1.0, harness=report))[0]
    cut = spec_of(lambda p: -jnp.log(p), np.float32(0.0), transforms=[{"t": "jit"}])
    raised, report = replay(cut, tmp_path, monkeypatch)
    assert raised is not None and report["nonfinite"].get("cause") == "none", report["nonfinite"]
    assert not nr.same(wanted, RunResult(1, "", "", 1.0, harness=report))[0]
    # where the program's run as a whole names no underflow (a Flax training loop failing past the
    # fix), the replay of its call is not held to one
    unnamed = Signature("nonfinite", tuple((k, "none" if k == "cause" else v) for k, v in wanted.fields))
    assert nr.same(unnamed, RunResult(1, "", "", 1.0, harness=replay(soft, tmp_path, monkeypatch)[1]))[0]


def test_a_finite_call_passes(tmp_path, monkeypatch):
    spec = spec_of(lambda a: lax.sqrt(a + 1.0), np.float32(1.0), transforms=[{"t": "grad", "argnums": [0]}])
    raised, report = replay(spec, tmp_path, monkeypatch)
    called = report.pop(CALLED)  # the call's own seconds, for the level's estimate of its write-back
    assert raised is None and report == {"program": {"exit": 0}, "nonfinite": None} and called > 0.0
    assert not nr.same(WANTED, RunResult(0, "", "", 1.0, harness=report))[0]


def test_the_public_function_that_reached_it_is_not_the_failure():
    own = OwnCheck()
    via_sqrt = Signature("nonfinite", tuple((k, "sqrt" if k == "from" else v) for k, v in WANTED.fields), "other")
    assert own.same(WANTED, via_sqrt)
    elsewhere = Signature("nonfinite", tuple((k, "log" if k == "op" else v) for k, v in WANTED.fields))
    assert not own.same(WANTED, elsewhere)


@pytest.mark.parametrize("fields, ending", [
    ((("type", "AssertionError"), ("check", "assert")), ["g = jax.grad(f)(0.0)", "assert jnp.isfinite(g)"]),
    ((("type", "FloatingPointError"), ("check", "raise")),
     ["g = jax.grad(f)(0.0)", "if not jnp.isfinite(g):", "    raise FloatingPointError('non-finite gradient norm nan')"]),
])
def test_the_written_back_script_ends_in_the_programs_kind_of_check(fields, ending, tmp_path):
    """... and a raise says what the program's said (its output's last line)."""
    spec = spec_of(masked_sqrt, np.float32(0.0), transforms=[{"t": "grad", "argnums": [0]}])
    said = "Traceback (most recent call last):\n  ...\nFloatingPointError: non-finite gradient norm nan\n"
    wanted = Signature("nonfinite", fields + (("in", "grad"), ("op", "sqrt")), "", said)
    from reducer.levels.jaxpr.as_script import emit

    model = jp.parse(jp.dumps(spec))
    text = value_checks.finish_script(emit(model)[0], model, wanted)
    assert text.rstrip("\n").splitlines()[-len(ending):] == ending
    # in the user's words: `lax.sqrt` and `select_n` as the jax.numpy calls that stage them
    assert "jnp.sqrt(a)" in text and "jnp.where(" in text and "lax." not in text, text
    (tmp_path / "repro.py").write_text(text)
    done = subprocess.run([sys.executable, "repro.py"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1 and dict(fields)["type"] in done.stderr.splitlines()[-1], done.stderr[-800:]


def test_an_exit_with_a_message_is_written_back_as_one(tmp_path):
    """A program that stops with `raise SystemExit(msg)` prints the message alone, no traceback: its
    written-back script exits with that message, not by an `assert` (a failure of another kind)."""
    spec = spec_of(masked_sqrt, np.float32(0.0), transforms=[{"t": "grad", "argnums": [0]}])
    fields = (("type", "SystemExit"), ("check", "exit"), ("in", "grad"), ("op", "sqrt"))
    wanted = Signature("nonfinite", fields, "", "step 1\nnon-finite gradients at step 1 (loss=0.7161)\n")
    from reducer.levels.jaxpr.as_script import emit

    model = jp.parse(jp.dumps(spec))
    text = value_checks.finish_script(emit(model)[0], model, wanted)
    assert text.rstrip("\n").splitlines()[-2:] == [
        "if not jnp.isfinite(g):", "    raise SystemExit('non-finite gradients at step 1 (loss=0.7161)')"]
    (tmp_path / "repro.py").write_text(text)
    done = subprocess.run([sys.executable, "repro.py"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.splitlines()[-1] == "non-finite gradients at step 1 (loss=0.7161)"


def test_a_gradient_nan_read_beside_a_finite_value_is_written_back_as_the_gradient_alone(tmp_path):
    """`value_and_grad` written back as `jax.grad` where the value was made in the gradient alone: the
    check reads what the program's did, in fewer tokens; a value made forward keeps both."""
    from reducer.levels.jaxpr.as_script import emit

    spec = jp.parse(jp.dumps(spec_of(masked_sqrt, np.float32(0.0), transforms=[{"t": "value_and_grad", "argnums": [0]}])))
    alone = as_users_write.gradient_alone(spec, WANTED)
    assert [t.kind for t in alone.transforms] == ["grad"] and alone.transforms[0].argnums == [0]
    forward = Signature("nonfinite", tuple((k, "forward" if k == "in" else v) for k, v in WANTED.fields))
    assert as_users_write.gradient_alone(spec, forward) is None
    text = value_checks.finish_script(emit(alone)[0], alone, WANTED)
    assert "jax.grad(" in text and "value_and_grad" not in text and text.rstrip().endswith("assert jnp.isfinite(g)")
    (tmp_path / "repro.py").write_text(text)
    done = subprocess.run([sys.executable, "repro.py"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1 and "AssertionError" in done.stderr, done.stderr[-800:]


def test_calls_that_take_the_derivative_and_have_their_values_come_first():
    def encoded(transforms, values=True, eqns=1):
        spec = spec_of(lambda a: lax.sqrt(a) * 1.0 if eqns > 1 else lax.sqrt(a), np.float32(1.0),
                       transforms=transforms)
        if not values:
            del spec["args"][0]["values"]
        return jp.dumps(spec)

    plain, guessed = encoded([{"t": "jit"}]), encoded([{"t": "grad", "argnums": [0]}], values=False)
    taken, bigger = encoded([{"t": "grad", "argnums": [0]}]), encoded([{"t": "grad", "argnums": [0]}], eqns=2)
    assert replay_order.likeliest_first([plain, guessed, bigger, taken], WANTED) == [taken, bigger, guessed, plain]


def test_a_value_made_forward_is_also_replayed_from_a_value_and_grad_call_as_its_value_alone(tmp_path, monkeypatch):
    """A hand-written log-sigmoid's `0 * log(1 / (1 + exp(200)))`: the program checks the loss, and
    the gradient taken beside it stays NaN under `log`'s fix (`exp`'s Inf times a zero cotangent), so
    the `value_and_grad` call names no origin; its value alone names `log` at its pole and the
    overflow that made the 0, and a replay held to that cause looks for it alone."""
    def loss(z, y):
        return jnp.sum(y * jnp.log(1.0 / (1.0 + jnp.exp(-z))))

    args = (np.array([-200.0, 1.0], np.float32), np.array([0.0, 1.0], np.float32))
    both = jp.dumps(spec_of(loss, *args, transforms=[{"t": "value_and_grad", "argnums": [0]}]))
    wanted = Signature("nonfinite", (("value", "nan"), ("in", "forward"), ("op", "log"), ("point", "pole"),
                                     ("cause", "exp-overflow"), ("fix", "inner-where")))
    assert replay_order.worth_replaying([both], Signature("nonfinite", (("in", "grad"),))) == [both]
    first, alone = replay_order.worth_replaying([both], wanted)
    assert first == both and not jp.loads(alone)["transforms"]
    found = replay(jp.loads(both), tmp_path, monkeypatch)[1]["nonfinite"]
    assert "point" not in found, found  # no fix of one operation makes the gradient finite too
    found = replay(jp.loads(alone), tmp_path, monkeypatch)[1]["nonfinite"]
    assert (found["op"], found.get("point"), found.get("cause")) == ("log", "pole", "exp-overflow"), found
    held = jp.loads(value_checks.with_check(alone, "nonfinite", wanted=wanted))
    assert held["cause"] == "exp-overflow" and replay(held, tmp_path, monkeypatch)[1]["nonfinite"]["cause"] == \
        "exp-overflow"
    underflow = Signature("nonfinite", tuple((k, "exp-underflow" if k == "cause" else v) for k, v in wanted.fields))
    other = jp.loads(value_checks.with_check(alone, "nonfinite", wanted=underflow))
    assert "cause" not in replay(other, tmp_path, monkeypatch)[1]["nonfinite"]  # a NaN's: none named


NESTED = '''
import jax
import jax.numpy as jnp

def energy(x):
    return jnp.sum(jnp.where(x > 0, jnp.sqrt(x), 0.0))

@jax.jit
def step(x):
    return jax.grad(energy)(x * 2.0)

g = step(jnp.array([0.0, 1.5, 2.0]))
assert jnp.isfinite(g).all()
'''


def recorded_inner_grads(tmp_path, program: str) -> list[dict]:
    """The `jit ∘ grad` calls a capturing run of `program` records ahead, with their values."""
    (tmp_path / "prog.py").write_text(program)
    env = dict(os.environ, REDUCER_CAPTURE_AHEAD="1", REDUCER_CAPTURE_VALUES="1")
    subprocess.run([sys.executable, "-m", "reducer.levels.jaxpr.capture", "prog.py", "out.json"], cwd=tmp_path,
                   env=env, capture_output=True, text=True, timeout=300)
    specs = [jp.loads(s) for s in json.loads((tmp_path / "out.json").read_text())["ahead"]]
    return [s for s in specs if [t["t"] for t in s["transforms"]] == ["jit", "grad"]]


def test_a_call_made_inside_a_traced_one_is_recorded_with_its_values(tmp_path):
    nested = recorded_inner_grads(tmp_path, NESTED)
    assert nested and nested[0]["args"][0].get("values") == [0.0, 3.0, 4.0], nested


CLOSED_OVER = '''
import jax
import jax.numpy as jnp

@jax.jit
def step(x, w):
    def energy(w):
        return jnp.sum(jnp.where(x > 0, jnp.sqrt(x * w), 0.0))
    return jax.grad(energy)(w)

g = step(jnp.array([0.0, 1.5, 2.0]), 2.0)
assert jnp.isfinite(g).all()
'''


def test_the_values_an_inner_call_closes_over_are_recorded_too(tmp_path):
    nested = recorded_inner_grads(tmp_path, CLOSED_OVER)
    assert nested and [a.get("values") for a in nested[0]["args"]] == [[2.0], [0.0, 1.5, 2.0]], nested


NAN_STEP_THEN_NAN_PARAMETERS = '''
import jax
import jax.numpy as jnp

def energy(w, x):
    return jnp.sum(jnp.where(x > 0, jnp.sqrt(x * w), 0.0))

@jax.jit
def step(w, x):
    return w - 0.1 * jax.grad(energy)(w, x)

w = jnp.array([1.0, 1.0, 1.0])
for x in (jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.5, 2.0]), jnp.array([1.0, 1.0, 1.0])):
    w = step(w, x)
assert jnp.isfinite(w).all()
'''


def test_the_values_recorded_are_the_failing_steps_not_the_nan_parameters_it_handed_on(tmp_path):
    """The loop's second step makes the NaN from finite parameters; the third reads the NaN it wrote.
    The call replayed is the second (the last with finite inputs), not the latest."""
    nested = recorded_inner_grads(tmp_path, NAN_STEP_THEN_NAN_PARAMETERS)
    assert nested, nested
    w, x = (a.get("values") for a in nested[0]["args"][:2])
    assert x == [0.0, 1.5, 2.0] and all(math.isfinite(v) for v in w), nested


def test_a_lax_function_given_to_a_transformation_is_the_operation_at_fault(tmp_path):
    from reducer.faults.nonfinite import located, with_checks

    source = "import jax\nfrom jax import lax\nf = lax.sqrt\ng = jax.grad(f)(0.0)\nassert jax.numpy.isfinite(g)\n"

    def output(infs):
        (tmp_path / "prog.py").write_text(with_checks(source, infs))
        done = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, JAX_TRACEBACK_FILTERING="off"))  # as candidates run
        return done.stdout + done.stderr

    found = located(output, source)
    assert found is not None and (found["in"], found["op"]) == ("grad", "sqrt"), found


SCRIPT = '''
"""A small model whose training step checks its gradients."""
import jax
import jax.numpy as jnp


class Springs:
    def __init__(self, n):
        self.rest = jnp.ones(n)

    def energy(self, positions):
        gaps = jnp.linalg.norm(positions[:, None, :] - positions[None, :, :], axis=-1)
        return jnp.sum((gaps - 1.0) ** 2)


@jax.jit
def step(positions):
    model = Springs(positions.shape[0])
    return jax.grad(model.energy)(positions)


positions = jnp.arange(12.0).reshape(4, 3) / 7.0
for epoch in range(3):
    grads = step(positions)
    assert jnp.isfinite(grads).all(), f"epoch {epoch}: gradient is not finite"
    positions = positions - 0.01 * grads
'''


@pytest.mark.slow
def test_a_nan_gradient_script_reduces_through_the_traced_level(tmp_path):
    (tmp_path / "springs.py").write_text(SCRIPT)
    done = subprocess.run([sys.executable, "-m", "reducer.cli", "reduce", "springs.py", "--out", "out",
                           "--max-time", "240", "--levels", "jaxpr"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    log = (tmp_path / "out" / "reduce.log").read_text()
    assert "judged by the nonfinite check" in log and "written back as a script" in log, log
    sig = json.loads((tmp_path / "out" / "signature.json").read_text())
    assert sig["family"] == "nonfinite" and sig["fields"]["op"] == "sqrt" and sig["fields"]["in"] == "grad", sig
    repro = (tmp_path / "out" / "repro.py").read_text()
    assert "jax.grad(" in repro and "isfinite" in repro and "class Springs" not in repro, repro


def test_a_value_that_only_spreads_on_its_line_is_traced_to_the_line_that_made_it():
    from reducer.faults.nonfinite import _made_by

    source = "import jax.numpy as jnp\n\n\ndef f(b):\n    c = jnp.log(b)\n    d = b * c\n    return d\n"
    assert _made_by(source, 6, "    d = b * c") == "log"
    assert _made_by(source, 6, "    d = b * e") == ""  # no operand made by a singular function
    assert _made_by("x = 1\n", 6, "d = b * c") == ""  # not the program the line is in


SPLIT = '''
import jax
import jax.numpy as jnp

def entropy(p):
    lp = jnp.log(p)
    terms = p * lp
    return -jnp.sum(jnp.where(p > 0, terms, 0.0))

g = jax.grad(entropy)(jnp.array([0.0, 0.5, 0.5]))
assert jnp.isfinite(g).all()
'''


def test_a_log_on_its_own_line_is_the_operation_at_fault(tmp_path):
    from reducer.faults.nonfinite import located, with_checks

    def output(infs):
        (tmp_path / "prog.py").write_text(with_checks(SPLIT, infs))
        done = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        return done.stdout + done.stderr

    found = located(output, SPLIT)
    assert found is not None and found["op"] == "log", found


@pytest.mark.parametrize("fun, arg", [
    (lambda x: lax.dynamic_update_slice(x, jnp.ones(2), (1,)), np.arange(5.0, dtype=np.float32)),
    (lambda x, i: lax.dynamic_slice(x, (i, 0), (2, 2)), (np.arange(12.0, dtype=np.float32).reshape(4, 3), np.int32(1))),
])
def test_dynamic_slices_are_written_back_with_their_indices_as_a_sequence(fun, arg, tmp_path):
    from reducer.levels.jaxpr.as_script import emit

    args = arg if isinstance(arg, tuple) else (arg,)
    text, arrays = emit(jp.parse(jp.dumps(spec_of(fun, *args))))
    (tmp_path / "repro.py").write_text(text)
    done = subprocess.run([sys.executable, "repro.py"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-800:]
    assert done.stdout.split() == str(np.asarray(fun(*args))).split()


def test_the_remedy_puts_a_value_inside_the_functions_domain():
    from reducer.faults.nonfinite import evidence

    assert "jnp.where(mask, x, 0.0)` before `arccos(x)`" in evidence({"op": "acos", "from": "arccos", "in": "grad"})
    assert "jnp.where(mask, x, 1.0)` before `norm(x)`" in evidence({"op": "sqrt", "from": "norm", "in": "grad"})


def test_no_written_back_form_is_tried_once_max_time_has_passed():
    """Loaded, four written-back forms' runs went 56 s past --max-time: none is tried once it passed."""
    from reducer.levels.jaxpr.write_back import write_back
    from reducer.workers.sandbox import Limits

    spec = jp.dumps(spec_of(lambda p: jnp.sum(jnp.log(p)), np.zeros(3, np.float32), transforms=[{"t": "jit"}]))
    said = []  # no sandbox: a form run would fail the test
    assert write_back(spec, None, Limits(), OwnCheck(), WANTED, 2, said.append, late=lambda need: True) is None
    assert said == ["jaxpr level: write-back stopped: --max-time reached before every written-back form was tried"]


def test_no_written_back_form_starts_that_would_run_past_max_time(monkeypatch):
    """Each form waited for --max-time to pass, and the last one ran 22 s past it: the next form is
    tried only when the seconds the last one took are left."""
    from reducer.levels.jaxpr import write_back as module
    from reducer.workers.sandbox import Limits

    def form_runs(*args):
        time.sleep(0.05)
        return 0, "it showed no failure"

    monkeypatch.setattr(module, "_verify", form_runs)
    spec = jp.dumps(spec_of(lambda p: jnp.sum(jnp.log(p)), np.zeros(3, np.float32), transforms=[{"t": "jit"}]))
    needs, said = [], []
    late = lambda need: needs.append(need) or need > 0.0  # noqa: E731
    assert module.write_back(spec, None, Limits(), OwnCheck(), WANTED, 2, said.append, late=late) is None
    assert needs[0] == 0.0 and needs[1] >= 0.05 and len(needs) == 2
    assert said[-1].startswith("jaxpr level: write-back stopped: --max-time")


def test_a_standardisation_by_a_one_pass_variance_names_the_rounding_that_put_it_below_zero(tmp_path, monkeypatch):
    """No fix of `sqrt` takes the NaN away (its 0 divides by 0 next); the arithmetic before it evaluated
    in float64 does (`fix=float64-arithmetic`), and a cut that makes the negative variance an input
    keeps the `sqrt` of it but not the rounding: the job's origin holds the replay to that cause."""
    x = np.float32(4096.1) + np.float32(1e-3) * np.sin(np.arange(64, dtype=np.float32))

    def standardised(x):
        return (x - jnp.mean(x)) / jnp.sqrt(jnp.mean(x ** 2) - jnp.mean(x) ** 2)

    raised, report = replay(spec_of(standardised, x, transforms=[{"t": "jit"}]), tmp_path, monkeypatch)
    found = report["nonfinite"]
    assert raised is not None and (found["in"], found["op"], found.get("fix")) == \
        ("forward", "sqrt", "float64-arithmetic"), found
    assert found["cause"].endswith("-rounding") and "reduce_sum" in found["cause"], found
    wanted = Signature("nonfinite", (("value", "nan"), ("in", "forward"), ("op", "sqrt"), ("cause", found["cause"]),
                                     ("fix", "float64-arithmetic")))
    assert nr.same(wanted, RunResult(1, "", "", 1.0, harness=report))[0]
    cut = spec_of(lambda v: jnp.ones(3) / jnp.sqrt(v), np.float32(-4.0), transforms=[{"t": "jit"}])
    assert not nr.same(wanted, RunResult(1, "", "", 1.0, harness=replay(cut, tmp_path, monkeypatch)[1]))[0]


def test_a_nan_constant_a_library_chooses_inside_a_compiled_gradient_is_met_where_chosen(tmp_path, monkeypatch):
    """`vonmises.logpdf(mu, 0.0)` chooses its NaN constant; under `jit` ∘ `value_and_grad` JAX's checks
    let it through and stopped at `0.01 * prior`'s conversion: the replay is met op by op, at the
    `where` inside `logpdf` (as the program's own run is, `reducer.faults.origin`)."""
    from jax.scipy.stats import vonmises

    def loss(mu):
        return -vonmises.logpdf(mu, 4.0).mean() + 0.01 * -vonmises.logpdf(mu, 0.0).mean()

    spec = spec_of(loss, np.zeros(3, np.float32), transforms=[{"t": "jit"}, {"t": "value_and_grad", "argnums": [0]}])
    raised, report = replay(spec, tmp_path, monkeypatch)
    assert raised is not None
    found = report["nonfinite"]
    assert (found["in"], found["op"], found["prim"]) == ("forward", "select_n", "select_n"), found
