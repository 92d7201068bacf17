"""The check-alone start (`reducer.levels.source.starts.check_alone`): the failing check of a helper
and the statements that compute what it compares, fed the arrays they read when it failed; on a
real run of a program that is not a benchmark case, and on the probe's facts."""
import ast
import threading

from conftest import PROGRAMS, run_text
from oracles.outcome import Signature
from reducer.levels.source import starts
from reducer.levels.source.starts.check_alone import CheckAlone, compose, facts
from reducer.levels.source.starts.check_probe import MARK

SOFTPLUS = (PROGRAMS / "own_checks" / "softplus_check_in_helper.py").read_text()
NONFINITE = Signature("nonfinite", (("type", "AssertionError"), ("check", "assert_allclose"), ("value", "+inf"),
                                    ("in", "forward"), ("op", "exp")))


def _array(values, shape, jax=True, dtype="float32"):
    return {"dtype": dtype, "shape": shape, "jax": jax, "values": values}


#: what the probe reports of the helper's frame (its line 22) when the check failed, cut to 2x2
FACTS = {"line": 22, "arrays": {
    "x": _array([1.0, 200.0, 3.0, 4.0], [2, 2]),
    "pre": _array([5.0, 120.5, 0.5, 2.0], [2, 2]),
    "got": _array([5.0, float("inf"), 0.9, 2.1], [2, 2], jax=False),
    "want": _array([5.0, 120.5, 0.9, 2.1], [2, 2], jax=False, dtype="float64")}}


def test_the_helpers_check_at_the_element_where_its_sides_part_then_whole():
    point, batch, whole = compose(SOFTPLUS, FACTS)
    lines = point.splitlines()
    assert lines[:3] == ["import jax.numpy as jnp", "import numpy as np", "def softplus(x):"]
    assert lines[-4:] == ["pre = 120.5", "got = np.asarray(softplus(pre))",
                          "want = np.logaddexp(0.0, np.asarray(pre, np.float64))",
                          "np.testing.assert_allclose(got, want, rtol=1e-05, atol=1e-06)"]
    # the compared values are computed, never written out; what computed `pre` (the model) is gone
    assert "got = np.array" not in point and "params" not in point and "x =" not in point
    assert "pre = jnp.array([[5.0, 120.5], [0.5, 2.0]], jnp.float32)" in whole
    assert "pre = jnp.array([[120.5]], jnp.float32)" in batch.splitlines()  # the element as a batch of one
    ast.parse(point), ast.parse(whole)


def test_a_non_finite_input_is_written_as_python_reads_it():
    found = {"line": 22, "arrays": dict(FACTS["arrays"], pre=_array([float("nan")] * 4, [2, 2], jax=False))}
    assert "pre = float('nan')" in next(compose(SOFTPLUS, found))


def test_no_proposal_where_a_name_is_neither_followed_nor_seen():
    """Without `pre` seen, the check reaches the parameters and the features: a dict and a
    parameter this reading cannot write out; the compared values alone are never fed."""
    arrays = {k: v for k, v in FACTS["arrays"].items() if k != "pre"}
    assert list(compose(SOFTPLUS, {"line": 22, "arrays": arrays})) == []
    assert list(compose(SOFTPLUS, {"line": 999, "arrays": FACTS["arrays"]})) == []
    gate = "import jax.numpy as jnp\ndef f(x):\n    assert jnp.isfinite(x).all()\nf(jnp.ones(2))\n"
    assert list(compose(gate, {"line": 3, "arrays": {"x": _array([1.0, 2.0], [2])}})) == []  # a check of its input alone


def test_the_probe_reports_the_failing_frame_of_a_real_run_and_the_proposal_fails_alike(tmp_path):
    start = CheckAlone()
    assert start.applies(NONFINITE) and not start.applies(Signature("crash", ()))
    runs = []

    def run(text):
        runs.append(run_text(text, tmp_path))
        return runs[-1]

    point, batch, whole = start.proposals(SOFTPLUS, run)
    assert len(runs) == 1 and MARK in runs[0].stderr
    found = facts(runs[0].output)
    assert found["line"] == 22 and {"x", "pre", "got", "want"} <= set(found["arrays"])
    assert [n for n in found["arrays"] if found["arrays"][n]["jax"]] == ["x", "pre"]
    assert point.count("\n") == 8 and "pre = jnp.array([[" in whole
    for proposal in (point, batch, whole):
        seen = run_text(proposal, tmp_path)
        assert seen.returncode == 1 and "inf location mismatch" in seen.stderr


def test_integer_labels_are_fed_and_each_kind_of_non_finite_value_keeps_its_row(tmp_path):
    """A per-example cross-entropy by hand indexes its probabilities by integer labels along the batch
    axis (`labels[:, None]`): the probe reports the labels too, the element alone cannot index, a batch
    of one can, and a batch of one row per kind of non-finite value the check read (a NaN row and a
    +Inf row) shows what the whole batch did."""
    program = (PROGRAMS / "own_checks" / "softmax_check_with_labels.py").read_text()
    runs = []

    def run(text):
        runs.append(run_text(text, tmp_path))
        return runs[-1]

    element, one, kinds, whole = CheckAlone().proposals(program, run)
    found = facts(runs[0].output)
    assert found["arrays"]["labels"]["dtype"] == "int32" and all(type(v) is int for v in found["arrays"]["labels"]["values"])
    assert "labels = 1" in element.splitlines() and "labels = jnp.array([1], jnp.int32)" in one.splitlines()
    assert "labels = jnp.array([1, 2], jnp.int32)" in kinds.splitlines()
    assert "predict(" not in kinds and "params" not in kinds
    assert "not subscriptable" in run_text(element, tmp_path).stderr
    shown = run_text(kinds, tmp_path)
    assert shown.returncode == 1 and " nan" in shown.stderr and "inf," in shown.stderr.replace(" ", "")
    assert run_text(one, tmp_path).returncode == 1


def test_a_raise_under_an_if_is_checked_by_the_if():
    program = ("import jax.numpy as jnp\nimport numpy as np\n"
               "def check(model, x):\n"
               "    pre = model(x)\n"
               "    got = jnp.log(jnp.exp(pre))\n"
               "    want = np.asarray(pre, np.float64)\n"
               "    if not np.allclose(got, want):\n"
               "        raise ValueError('log(exp(x)) is not x')\n")
    found = {"line": 8, "arrays": {"pre": _array([1.0, 200.0], [2]), "got": _array([1.0, float("inf")], [2]),
                                   "want": _array([1.0, 200.0], [2], jax=False, dtype="float64")}}
    point, _, whole = compose(program, found)
    assert point.splitlines()[-5:] == ["pre = 200.0", "got = jnp.log(jnp.exp(pre))", "want = np.asarray(pre, np.float64)",
                                       "if not np.allclose(got, want):", "    raise ValueError('log(exp(x)) is not x')"]
    assert "pre = jnp.array([1.0, 200.0], jnp.float32)" in whole


def test_the_last_report_of_a_run_is_its_failures():
    caught = f"{MARK} " + '{"line": 3, "arrays": {}}'
    failed = f"{MARK} " + '{"line": 9, "arrays": {}}'
    assert facts(f"{caught}\nwarning\n{failed}\n")["line"] == 9 and facts("no report") is None


def test_a_program_without_a_check_in_a_function_is_left_to_the_passes():
    def run(text):
        raise AssertionError("no probe run for a program with nothing to take the check out of")

    assert list(CheckAlone().proposals("import numpy as np\nassert np.isfinite(np.inf)\n", run)) == []
    written_back = "import jax.numpy as jnp\ndef f(a):\n    return jnp.log(a)\nassert jnp.isfinite(f(0.0))\n"
    assert list(CheckAlone().proposals(written_back, run)) == []  # no check inside a function


def test_the_level_tries_it_after_the_other_starts(monkeypatch):
    assert starts.STARTS[-1] is CheckAlone
    tried = []
    monkeypatch.setattr(CheckAlone, "proposals", lambda self, program, run: iter(["x = 1\n"]))
    found = starts.starting_point(SOFTPLUS, NONFINITE, None, lambda c, cancel: tried.append(c) or True,
                                  lambda line: None, threading.Event())
    assert found[0] == "x = 1\n" and found[1].name == "check-alone" and tried == ["x = 1\n"]


def test_a_check_through_a_loss_that_calls_the_model_takes_the_loss_in(tmp_path):
    """`bce(params, x, labels)` runs the model and then the hand-written formula: the probe reports
    the loss's frame at its return, and the proposal computes the formula on the logits it held."""
    program = (PROGRAMS / "own_checks" / "bce_check_through_loss.py").read_text()
    runs = []

    def run(text):
        runs.append(run_text(text, tmp_path))
        return runs[-1]

    proposals = list(CheckAlone().proposals(program, run))
    assert len(runs) == 1 and len(proposals) == 4  # the element, as a batch, a row per kind, whole
    assert {"logits", "p"} <= set(facts(runs[0].output)["returned"]["bce"])
    point = proposals[0]
    assert "p = 1.0 / (1.0 + jnp.exp(-logits))" in point and "jnp.log(1.0 - p)" in point
    assert "params" not in point and "predict(" not in point and "got = np.array" not in point
    for proposal in proposals:
        seen = run_text(proposal, tmp_path)
        assert seen.returncode == 1 and "location mismatch" in seen.stderr


def test_an_input_with_more_dimensions_is_fed_at_the_compared_element_s_row():
    """A check of a `logsumexp` by hand over the last axis compares one value per row: the input is
    fed the row of the element where the two sides part, not one of its numbers."""
    program = ("import jax.numpy as jnp\nimport numpy as np\n"
               "def lse(z):\n    return jnp.log(jnp.sum(jnp.exp(z), axis=-1))\n"
               "def check(model, x):\n    z = model(x)\n    got = np.asarray(lse(z))\n"
               "    want = np.log(np.sum(np.exp(np.asarray(z, np.float64)), axis=-1))\n"
               "    np.testing.assert_allclose(got, want)\n")
    found = {"line": 9, "arrays": {
        "z": _array([0.5, 1.0, 2.0, 90.0, 95.0, 1.0], [2, 3]),
        "got": _array([2.4, float("inf")], [2], jax=False),
        "want": _array([2.4, 95.0], [2], jax=False, dtype="float64")}}
    point = next(compose(program, found))
    assert "z = jnp.array([90.0, 95.0, 1.0], jnp.float32)" in point.splitlines()
    assert "got = np.asarray(lse(z))" in point and "model" not in point


#: an evaluation helper whose check reads a mean over the batch: no element of it to part at
EVALUATE = ("import jax\nimport jax.numpy as jnp\nimport numpy as np\n\n\n"
            "def bce(y, z):\n    p = jax.nn.sigmoid(z)\n    return -jnp.mean(y * jnp.log(p) + (1.0 - y) * jnp.log(1.0 - p))\n"
            "\n\ndef evaluate(y, z):\n    loss = bce(y, z)\n    assert jnp.isfinite(loss), loss\n")
EVALUATED = {"line": 13, "arrays": {"y": _array([0.0, 0.0, 1.0, 1.0], [4], jax=False, dtype="float64"),
                                    "z": _array([0.5, -30.0, 19.0, 2.0], [4]),
                                    "loss": _array([float("nan")], [])}}


def test_a_check_of_a_mean_over_the_batch_starts_from_the_rows_with_its_largest_and_smallest_values(tmp_path):
    """The rows where each array is largest and smallest, each a batch of one: a saturated sigmoid's
    logit (19.0, label 1) is one of them, and that proposal fails as the program did; a float32 array
    is spelled as JAX's default float where the program made float64 takes the failure away."""
    proposals = list(compose(EVALUATE, EVALUATED))
    rows = [[line for line in p.splitlines() if line.startswith(("y =", "z ="))] for p in proposals]
    assert rows[0] == ["y = np.array([1.0], np.float64)", "z = jnp.array([19.0], jnp.float32)"], rows
    assert ["y = np.array([0.0], np.float64)", "z = jnp.array([-30.0], jnp.float32)"] in rows
    assert "loss = bce(y, z)" in proposals[0] and "loss = jnp" not in proposals[0]  # the mean is computed
    done = run_text(proposals[0], tmp_path)
    assert done.returncode == 1 and "AssertionError: nan" in done.stderr, done.stderr
    widened = next(compose(EVALUATE, EVALUATED, default_float=True))
    assert "z = jnp.array([19.0], float)" in widened and "y = np.array([1.0], np.float64)" in widened
