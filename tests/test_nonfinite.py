"""Where a NaN or an Inf is made (`reducer.faults.nonfinite`), on real runs with JAX's own checks on:
the operation at fault, whether its value or its derivative, and the call of the program it came
through; and the `nonfinite` signature a run carrying that fault gets (`reducer.faults.attach`)."""

import tempfile
from pathlib import Path

import pytest

from conftest import PROGRAMS, run_text
from oracles import nonfinite as nonfinite_kinds
from oracles.outcome import Signature
from oracles.own_check import OwnCheck
from reducer.faults.attach import Attached
from reducer.faults.nonfinite import NonFiniteValues, applies, located, read, singular_calls, with_checks
from reducer.faults.origin import ValueOrigin

OWN = PROGRAMS / "own_checks"


@pytest.mark.slow
@pytest.mark.parametrize("name, where", [
    ("nan_gradient_assert", {"in": "grad", "op": "sqrt", "from": "norm"}),
    ("entropy_where_log", {"in": "forward", "op": "log", "from": "log"}),
    ("log_of_zero_raise", {"in": "forward", "op": "log", "from": "log"}),
    ("arctanh_mean_assert", {"in": "forward", "op": "atanh", "from": "arctanh"}),
])
def test_the_operation_at_fault_is_located(name, where, tmp_path):
    source = (OWN / f"{name}.py").read_text()
    fault = NonFiniteValues(lambda text: run_text(text, tmp_path)).locate(source, None, None)
    assert fault is not None and dict(fault.fields) == where
    assert f"`{where['op']}`" in fault.evidence and "remedy" in fault.evidence


@pytest.mark.slow
@pytest.mark.parametrize("name, origin", [
    ("nan_gradient_assert", {"value": "nan", "in": "grad", "op": "sqrt"}),
    # JAX's checks first meet the masked forward `log(0)`; the checked NaN is the gradient's
    ("entropy_where_log", {"value": "nan", "in": "grad", "op": "log"}),
    ("arctanh_mean_assert", {"value": "nan", "in": "forward", "op": "atanh"}),
    # the loss's 0/0 at the first step; with it fixed, the norm's gradient NaN fails the next step
    ("unit_rows_loop", {"value": "nan", "in": "forward", "op": "div", "from": "div", "fix": "inner-where"}),
    # JAX's checks meet a masked forward `0 / 0` first; the checked NaN is `arccos`'s, a call of the program's
    ("arccos_clip_grad_assert", {"value": "nan", "in": "grad", "op": "acos", "from": "arccos", "point": "edge"}),
    # a Flax layer's float32 parameters stay float32 in a float64 program: `exp` alone in float64 is the fix
    ("linen_float32_params_exp_overflow", {"value": "+inf", "in": "forward", "op": "exp", "fix": "float64"}),
    # `exp` overflows float64 too: JAX's softplus in place of the hand-written one is the fix
    ("log1p_exp_loss_assert", {"value": "+inf", "in": "forward", "op": "exp", "fix": "softplus"}),
])
def test_the_origin_is_where_the_fix_takes_the_value_away(name, origin, tmp_path):
    fault = ValueOrigin(lambda text: run_text(text, Path(tempfile.mkdtemp(dir=tmp_path)))).locate((OWN / f"{name}.py").read_text(), None, None)
    assert {k: v for k, v in fault.fields if k in origin} == origin
    assert "runs through with" in fault.evidence


@pytest.mark.slow
@pytest.mark.parametrize("name, origin, calls", [
    # float64 fixes it, but only inside `bessel_jn` (its recurrence), whose value fits float32: the call's
    ("bessel_recurrence_float32", {"in": "forward", "op": "scan", "fix": "call-in-float64", "from": "bessel_jn"},
     True),
    # an inner `where` fixes it, but only inside `chi2.logpdf`, and SciPy's value is finite: the call's
    ("chi2_logpdf_at_zero", {"in": "forward", "fix": "call-by-namesake", "from": "logpdf"}, True),
    # float64 fixes it, but only inside `poch` (its `gamma(36)`) on the program's float32 inputs, and
    # poch(20, 16) = 8.5e22 fits float32: the call's
    ("poch_log_float32", {"in": "forward", "op": "exp", "fix": "call-in-float64", "from": "poch"}, True),
    # its overflow is inside `gamma` too, but gamma(40) does not fit float32: the program's
    ("gamma_overflow_float32", {"in": "forward", "op": "exp", "fix": "float64"}, False),
])
def test_a_fix_that_acts_only_inside_a_call_whose_value_is_finite_is_the_calls(name, origin, calls, tmp_path):
    """A fix found for an operation inside a public call (JAX's checks place the value in `bessel_jn`,
    `logpdf`, `gamma`) is the program's only where it acts outside the call too, or the value the call
    should give is not finite either (`reducer.faults.call_fix`)."""
    fault = ValueOrigin(lambda text: run_text(text, Path(tempfile.mkdtemp(dir=tmp_path)))).locate(
        (OWN / f"{name}.py").read_text(), None, None)
    assert {k: v for k, v in fault.fields if k in origin} == origin
    assert nonfinite_kinds.inside_call(dict(fault.fields)) == calls


@pytest.mark.slow
def test_a_run_carrying_the_fault_has_the_nonfinite_signature(tmp_path):
    """The original's own check becomes `nonfinite: in=grad op=sqrt from=norm`; a candidate whose NaN
    comes from elsewhere (`log`) is another failure."""
    oracle = OwnCheck()
    source = (OWN / "nan_gradient_assert.py").read_text()
    attached = Attached(ValueOrigin(lambda text: run_text(text, Path(tempfile.mkdtemp(dir=tmp_path)))), oracle, applies)
    first = run_text(source, tmp_path)
    sig, run = attached.establish(source, first, oracle.classify(first))
    assert sig.family == "nonfinite" and (sig.get("in"), sig.get("op"), sig.get("from")) == ("grad", "sqrt", "norm")
    assert sig.get("value") == "nan"
    assert "sqrt" in sig.title and "norm" in sig.title and "at fault" in attached.finding
    other = (OWN / "entropy_where_log.py").read_text()
    seen = oracle.classify(attached.attach(other, run_text(other, tmp_path)))
    assert seen.family == "nonfinite" and seen.get("op") == "unfixed" and not oracle.same(sig, seen)
    again = oracle.classify(attached.attach(source, run_text(source, tmp_path)))
    assert oracle.same(sig, again)


def test_a_run_whose_checked_runs_are_cut_short_is_cut_short_itself(tmp_path):
    """When the runs under JAX's checks time out (a final check near --max-time), whether the run
    carries the fault is unknown: the run counts as cut short, never as another failure."""
    oracle = OwnCheck()
    source = (OWN / "nan_gradient_assert.py").read_text()
    wanted = Signature("nonfinite", (("value", "nan"), ("in", "grad"), ("op", "sqrt"), ("from", "norm")))
    localiser = ValueOrigin(lambda text: run_text(text, tmp_path, timeout=0.05))
    attached = Attached(localiser, oracle, applies)
    attached.expect(wanted)
    localiser.expect(wanted)
    run = run_text(source, tmp_path)
    assert oracle.classify(run).get("reads") == "nonfinite" and not run.timed_out
    seen = attached.attach(source, run)
    assert seen.timed_out and oracle.classify(seen) is None


def test_the_checks_go_after_the_docstring_and_future_imports_and_keep_the_lines():
    source = '"""doc"""\nfrom __future__ import annotations\nx = 1\nassert x\n'
    checked = with_checks(source, infs=True)
    assert checked.splitlines()[:2] == source.splitlines()[:2] and len(checked.splitlines()) == 4
    assert "infs=True" in checked.splitlines()[2] and checked.splitlines()[2].endswith("x = 1")
    assert "infs=True" not in with_checks(source, infs=False)
    assert "eager=True" in with_checks(source, infs=True, eager=True) and "eager=True" not in checked


#: what the checks' line says of a run op by op
EAGER = "eager=True"


def test_checks_that_meet_nothing_run_once_more_op_by_op_and_checks_that_meet_it_do_not(tmp_path):
    """Where JAX's checks read no non-finite value (here a NumPy one; a Flax NNX test's `nnx.jit` result
    escaped them), the run is made again with `jit` off, where each operation's result is checked as it
    is made; a run whose checks meet the value is not made again. A candidate's is made again only
    where the original's value was met op by op alone (Equinox's `error_if` stops a compiled call
    before JAX's checks see its result), or where that is not known."""
    seen = []

    def run(text):
        seen.append(text)
        return run_text(text, tmp_path)

    numpy_log = "import numpy as np\nassert np.isfinite(np.log(np.float32(0)))\n"
    for eager_checks, runs in ((False, 1), (True, 2), (None, 2)):
        held = ValueOrigin(run)
        held.eager_checks = eager_checks
        held.checked(numpy_log, True)
        assert len(seen) == runs, eager_checks  # a candidate held to the origin
        seen.clear()
    ValueOrigin(run).checked("import numpy as np\nassert np.isfinite(np.log(np.float32(0)))\n", True, again=True)
    assert len(seen) == 2 and EAGER in seen[1] and EAGER not in seen[0]
    seen.clear()
    output = ValueOrigin(run).checked("import jax.numpy as jnp\nassert jnp.isfinite(jnp.log(0.0))\n", True, again=True)
    assert len(seen) == 1 and "FloatingPointError" in output


def test_an_op_by_op_run_past_its_timeout_leaves_what_the_checks_met_under_jit(tmp_path):
    """Op by op is slower by nature (a test that trains first): when that run times out, the output of
    the checks under `jit` stands, and the origin is not cut short by it."""
    def run(text):
        return run_text(text, tmp_path, timeout=0.05 if EAGER in text else 120)

    output = ValueOrigin(run).checked("import numpy as np\nassert np.isfinite(np.log(np.float32(0)))\n", True,
                                      again=True)
    assert "AssertionError" in output and "jax_disable_jit" not in output


def test_the_program_names_the_calls_whose_derivative_is_infinite_somewhere_in_its_order():
    source = ("import numpy as np\nimport jax.numpy as jnp\nfrom jax.numpy import sqrt\n"
              "d = jnp.linalg.norm(x) + np.log(2.0)\ny = jax.grad(jnp.arccos)(sqrt(d))\nz = jnp.linalg.norm(d)\n")
    assert singular_calls(source) == ["norm", "arccos", "sqrt"]
    assert singular_calls("def broken(:\n") == []


def test_reading_a_recorded_check():
    text = ('Traceback (most recent call last):\n  File "/home/u/fit.py", line 9, in <module>\n'
            '    g = jax.grad(loss)(w)\n  File "/home/u/fit.py", line 4, in loss\n    return jnp.sum(jnp.sqrt(w))\n'
            '  File "/usr/lib/python3.11/site-packages/jax/_src/numpy/ufuncs.py", line 1165, in sqrt\n'
            "    out = lax.sqrt(*promote_args_inexact('sqrt', x))\n"
            '  File "/usr/lib/python3.11/site-packages/jax/_src/interpreters/ad.py", line 1116, in standard_jvp2\n'
            '    tangents_out = list(tangents_out)\n'
            '  File "/usr/lib/python3.11/site-packages/jax/_src/lax/lax.py", line 1270, in div\n'
            '    return div_p.bind(x, y)\n'
            'FloatingPointError: invalid value (inf) encountered in div\n')
    found = read(text)
    assert (found["op"], found["prim"], found["in"], found["from"], found["kind"]) == ("sqrt", "div", "grad", "sqrt", "inf")
    assert found["within"] == ["/home/u/fit.py:9", "/home/u/fit.py:4"]
    assert read("no check fired\n") is None
    no_ad = text.replace("interpreters/ad.py", "interpreters/batching.py")  # no derivative's rule made it
    assert (read(no_ad)["op"], read(no_ad)["in"]) == ("sqrt", "forward")
    # JAX's frames filtered out (JAX_TRACEBACK_FILTERING's default): a derivative only where the program takes one
    filtered = no_ad + "\nFor simplicity, JAX has removed its internal frames from the traceback of the following exception."
    assert read(filtered, "g = jax.grad(loss)(w)\n")["in"] == "grad"
    assert read(filtered, "g = eqx.filter_grad(loss)(w)\n")["in"] == "grad"
    assert read(filtered, "g = loss(w)\n")["in"] == "forward"


def checked_output(frames: list[tuple[int, str, str]], library: str, value: str) -> str:
    """A run's output with JAX's checks on: the program's frames (line, function, source), the
    library line below them, and the check's message."""
    text = "Traceback (most recent call last):\n"
    for line, function, source in frames:
        text += f'  File "/home/u/sac.py", line {line}, in {function}\n    {source}\n'
    text += f'  File "/usr/lib/python3.11/site-packages/jax/_src/numpy/lib.py", line 1, in f\n    {library}\n'
    return text + f"FloatingPointError: invalid value {value}\n"


#: real outputs of programs in tests/programs/own_checks run with JAX's NaN and Inf checks on (paths
#: shortened): `norm.isf`'s forward Inf in a program that takes a gradient elsewhere, and the Inf of
#: `sqrt`'s derivative rule under Equinox's `filter_value_and_grad`, a decorator no line of the program names;
#: the Inf of the `exp` inside `poch` that a `log` around the call then reads; the Inf of `t.logpdf`'s own
#: division at df=inf, on a line that divides too
NAN_CHECKS = Path(__file__).parent / "data" / "nan_checks"


def test_a_value_a_library_function_makes_is_forward_and_a_derivative_rule_s_is_not():
    isf = read((NAN_CHECKS / "norm_isf_threshold.txt").read_text(), (OWN / "norm_isf_threshold.py").read_text())
    assert (isf["op"], isf["in"], isf["from"]) == ("ndtri", "forward", "isf")  # not `assert_allclose`, called first
    eqx = read((NAN_CHECKS / "eqx_sqrt_grad.txt").read_text(), (OWN / "eqx_sqrt_grad.py").read_text())
    assert (eqx["op"], eqx["in"], eqx["from"]) == ("sqrt", "grad", "sqrt")
    # `jnp.log(poch(r, y))`: the `exp` inside `poch` overflowed before `log` ran; not `log`, singular but not entered
    poch = read((NAN_CHECKS / "poch_log_float32.txt").read_text(), (OWN / "poch_log_float32.py").read_text())
    assert (poch["op"], poch["in"], poch["from"]) == ("exp", "forward", "poch")
    # `t.logpdf(resid / scale, jnp.inf)`: the `div` the Inf run meets is `logpdf`'s (`df / 2`), not the line's `/`
    df_inf = read((NAN_CHECKS / "student_t_df_inf.txt").read_text(), (OWN / "student_t_df_inf.py").read_text())
    assert (df_inf["op"], df_inf["in"], df_inf["from"]) == ("div", "forward", "logpdf")


def test_a_nan_that_only_spread_an_inf_goes_back_to_the_operation_that_made_it():
    """`mean` sums the inf and -inf of `arctanh(±1)` into nan on another line: the fault is `atanh`.
    An Inf first met where it only spreads (a -inf mask converted) is one the program meant."""
    main = (19, "<module>", "loss = loss_fn(means, actions, advantages)")
    nan = checked_output([main, (15, "loss_fn", "return -jnp.mean(logp * advantages)")],
                         "return lax.reduce(a, 0, lax.add, (0,))", "(nan) encountered in reduce_sum")
    inf = checked_output([main, (14, "loss_fn", "logp = jax.vmap(log_prob)(means, actions)"),
                          (8, "log_prob", "pre_tanh = jnp.arctanh(jnp.clip(action, -1.0, 1.0))")],
                         "return lax.atanh(x)", "(inf) encountered in atanh")
    found = located(lambda infs: inf if infs else nan)
    assert (found["op"], found["in"], found["from"]) == ("atanh", "forward", "arctanh")
    mask = checked_output([main, (14, "loss_fn", "p = jax.nn.softmax(jnp.where(valid, logits, -jnp.inf))")],
                          "return lax.convert_element_type(x, dtype)", "(inf) encountered in convert_element_type")
    assert located(lambda infs: mask if infs else nan)["op"] == "reduce"


@pytest.mark.slow
def test_a_comparison_with_a_reference_and_a_finite_check_see_the_same_overflow(tmp_path):
    """The check that noticed a value is not what makes it: the program's `assert_allclose` against
    NumPy and the `isfinite` check a written-back traced program ends in both fail on `exp`'s +Inf,
    and the written-back one is the same failure (its fault is looked for, and found)."""
    oracle = OwnCheck()
    head = "import jax\nimport jax.numpy as jnp\nimport numpy as np\n"
    original = head + "np.testing.assert_allclose(jnp.log(1 + jnp.exp(jnp.float32(100.0))), np.logaddexp(0, 100.0))\n"
    written_back = head + "g = jax.vmap(jnp.exp)(jnp.asarray([[100.0]], jnp.float32))\nassert jnp.isfinite(g).all()\n"
    attached = Attached(ValueOrigin(lambda text: run_text(text, Path(tempfile.mkdtemp(dir=tmp_path)))), oracle, applies)
    first = run_text(original, tmp_path)
    sig, run = attached.establish(original, first, oracle.classify(first))
    assert sig.family == "nonfinite" and (sig.get("check"), sig.get("op"), sig.get("value")) == ("assert_allclose", "exp", "+inf")
    seen = oracle.classify(attached.attach(written_back, run_text(written_back, tmp_path)))
    assert seen.family == "nonfinite" and seen.get("check") == "assert" and oracle.same(sig, seen), seen


def test_a_fix_that_lets_the_check_pass_where_it_failed_gets_past_it_even_when_a_later_step_fails(tmp_path):
    """`checked_value.got_past`: the failing line ran more often (a training loop's next step)."""
    from reducer.faults import checked_value
    from reducer.faults.nonfinite import first_of
    from reducer.faults.origin import WATCH

    loop = "import math\nfor step in range(5):\n    x = math.nan if step == {bad} else 1.0\n    assert x == x, step\n"
    original, later, earlier = (run_text(first_of(loop.format(bad=bad), WATCH), tmp_path).output
                                for bad in (1, 3, 0))
    reached = checked_value.stopped_at(original)
    assert reached[0] == 4 and reached[1][4] == 2  # the check's line, run twice: it failed at step 1
    assert checked_value.got_past(later, reached)
    assert not checked_value.got_past(original, reached) and not checked_value.got_past(earlier, reached)
    assert not checked_value.got_past(original, None)
    # a record cut by another thread's output (XLA's log lines) is not read, and not read wrong
    cut = original.replace(f"{checked_value.LINES_START} 4 ", f"{checked_value.LINES_START} 4 2:1,3\nW1204 xla\n")
    assert checked_value.stopped_at(cut) is None and not checked_value.got_past(cut, reached)
