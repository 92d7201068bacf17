"""The call-alone start (`reducer.levels.source.starts.call_alone`): a NaN or an Inf made inside a
library call that no fix of the program's takes away, started from that call alone on what it was
given; on the probe's facts, and on a real run of a program that is not a benchmark case (a jitted
training step, `value_and_grad`, the call under `vmap`)."""
import ast
import threading

import jax
import jax.numpy as jnp
from jax.scipy.stats import vonmises

from conftest import PROGRAMS, run_text
from oracles.outcome import Signature
from reducer.levels.jaxpr.codec import Encoder
from reducer.levels.jaxpr.fault_alone import call_not_kept
from reducer.levels.source import starts
from reducer.levels.source.starts.call_alone import CallAlone, calls_of, compose, reports, watched
from reducer.levels.source.starts.call_probe import MARK

CIRCULAR = (PROGRAMS / "own_checks" / "circular_regression_vmap_prior.py").read_text()
FIELDS = (("type", "AssertionError"), ("check", "assert"), ("value", "nan"), ("in", "forward"), ("op", "select_n"),
          ("fix", "call-by-namesake"), ("from", "logpdf"))
INSIDE = Signature("nonfinite", FIELDS)
PROGRAM = """import jax.numpy as jnp
from jax.scipy.stats import vonmises
KAPPA = 0.0

def loss(model, x):
    mu = model(x)
    fit = vonmises.logpdf(x - mu, 4.0)
    return -(fit + vonmises.logpdf(mu, KAPPA)).mean()
"""


def _with(**changed) -> Signature:
    return Signature("nonfinite", tuple((k, changed.get(k, v)) for k, v in FIELDS))


def _site(program: str, name: str, k: int):
    """The program's tree and its `k`th call of `name` in it."""
    tree = ast.parse(program)
    return tree, calls_of(tree, name)[k]


def _array(values, shape, jax=True):
    return {"dtype": "float32", "shape": shape, "jax": jax, "values": values}


def test_every_call_of_the_function_is_watched_and_numbered_in_program_order():
    text = watched(PROGRAM + "args = (1.0, 0.0)\nvonmises.logpdf(*args)\n", "logpdf", "nan")
    assert text.splitlines()[0].startswith("import reducer.levels.source.starts.call_probe as _call_probe; "
                                           "_call_probe.install('nan'); import jax.numpy")
    assert "_call_probe.seen(0, vonmises.logpdf, x - mu, 4.0)" in text
    assert "_call_probe.seen(1, vonmises.logpdf, mu, KAPPA)" in text
    assert "vonmises.logpdf(*args)" in text  # starred arguments: not watched, not numbered
    assert [c.lineno for c in calls_of(ast.parse(PROGRAM), "logpdf")] == [7, 8]
    assert watched(PROGRAM, "logcdf", "nan") is None


def test_the_call_alone_at_the_element_that_held_the_value_then_whole():
    found = {"site": 1, "shape": [3], "at": 1, "value": "nan",
             "arguments": [_array([0.5, 1.5, 2.5], [3]), {"number": 0.0}]}
    point, whole = compose(*_site(PROGRAM, "logpdf", 1), found)
    assert point == "import jax.numpy as jnp\nfrom jax.scipy.stats import vonmises\nmu = 1.5\n" \
                    "assert jnp.isfinite(vonmises.logpdf(mu, 0.0))\n"
    assert whole.splitlines()[-2:] == ["mu = jnp.array([0.5, 1.5, 2.5], jnp.float32)",
                                      "assert jnp.isfinite(vonmises.logpdf(mu, 0.0)).all()"]
    # the model that made `mu`, the loss around the call and the other call are gone
    assert "model" not in whole and "fit" not in whole and "4.0" not in whole


def test_a_constant_stays_as_written_and_an_expression_gets_a_name_of_its_own():
    found = {"site": 0, "shape": [2], "at": 0, "value": "nan",
             "arguments": [_array([0.25, 0.5], [2]), {"number": 4.0}]}
    point, _ = compose(*_site(PROGRAM, "logpdf", 0), found)
    assert point.splitlines()[-2:] == ["arg0 = 0.25", "assert jnp.isfinite(vonmises.logpdf(arg0, 4.0))"]


def test_a_non_finite_number_the_program_computes_is_written_so_that_python_reads_it_back():
    """`t.logpdf(r, DF)` with `DF = jnp.inf` at module level: the number the call was given is `inf`,
    and the check reads the call's result alone (a check reads the values its line reads: not the `inf`
    the call is given)."""
    program = "import jax.numpy as jnp\nfrom jax.scipy.stats import t\nDF = jnp.inf\n" \
              "def nll(r):\n    return -t.logpdf(r, DF).mean()\n"
    found = {"site": 0, "shape": [2], "at": 0, "value": "nan",
             "arguments": [_array([0.5, -1.0], [2]), {"number": float("inf")}]}
    point, _ = compose(*_site(program, "logpdf", 0), found)
    assert point.splitlines()[-3:] == ["r = 0.5", "value = t.logpdf(r, float('inf'))", "assert jnp.isfinite(value)"]
    assert ast.parse(point) and "DF" not in point


def test_a_keyword_argument_and_a_numpy_array_are_written_as_the_program_gives_them():
    program = "import numpy as np\nfrom jax.scipy.stats import expon\ndef nll(t, s):\n" \
              "    return -expon.logcdf(t, scale=s).sum()\n"
    found = {"site": 0, "shape": [2], "at": 1, "value": "-inf",
             "arguments": [_array([1.0, 1e-9], [2], jax=False), _array([0.05, 0.06], [2])]}
    point, whole = compose(*_site(program, "logcdf", 0), found, wanted="+inf")
    # the program's check read +inf: the call's -inf, negated as the program negates it
    assert point.splitlines()[-3:] == ["t = 1e-09", "s = 0.06", "assert jnp.isfinite(-expon.logcdf(t, scale=s))"]
    assert "t = np.array([1.0, 1e-09], np.float32)" in whole and "import numpy as np" in whole


def test_no_proposal_where_the_callee_is_not_a_name_the_program_binds_where_it_is_called():
    program = "def step(self, x):\n    return self.dist.logpdf(x, 0.0)\n"
    found = {"site": 0, "shape": [], "at": 0, "arguments": [_array([1.0], []), {"number": 0.0}]}
    assert list(compose(*_site(program, "logpdf", 0), found)) == []
    unwritten = {**found, "arguments": [None, {"number": 0.0}]}  # an array too large for the probe to write
    assert list(compose(*_site(PROGRAM, "logpdf", 1), unwritten)) == []


def test_it_applies_to_a_value_made_forward_inside_a_call_no_fix_of_the_program_s_takes_away():
    start = CallAlone()
    assert start.applies(INSIDE) and start.applies(_with(fix="none")) and start.applies(_with(value="+inf"))
    assert not start.applies(_with(fix="inner-where"))  # the program's own fault: the traced level's
    assert not start.applies(_with(**{"in": "grad"}))
    assert not start.applies(_with(value="nan,+inf"))
    assert not start.applies(_with(type="FloatingPointError"))
    assert not start.applies(Signature("crash", ()))


def test_the_level_tries_it_before_the_check_alone_start():
    names = [kind.name for kind in starts.STARTS]
    assert names.index("call-alone") < names.index("check-alone")
    tried = []
    found = starts.starting_point("x = 1\n" * 40, INSIDE, lambda text: None,
                                  lambda candidate, cancel: tried.append(candidate) or True,
                                  lambda line: None, threading.Event())
    assert found is None and tried == []  # nothing to watch in a program that makes no call of `logpdf`


def test_a_real_training_step_reports_the_call_under_vmap_and_its_proposal_fails_alone(tmp_path):
    """Under `jit`, `value_and_grad` and `vmap`, the probe reports the prior's call (not the fit's,
    whose values stay finite), one example at a time; the proposal fails as the program did, and
    with SciPy's density in JAX's place it passes."""
    runs = []

    def run(text):
        runs.append(run_text(text, tmp_path))
        return runs[-1]

    start = CallAlone()
    assert start.applies(_with(fix="none"))
    proposals = list(start.proposals(CIRCULAR, run))
    assert len(runs) == 1 and MARK in runs[0].stderr and "AssertionError: step 0" in runs[0].stderr
    assert [found["site"] for found in reports(runs[0].output)] == [1]
    assert len(proposals) == 1  # one example's number: whole, it is the same
    lines = proposals[0].splitlines()
    assert lines[:2] == ["import jax.numpy as jnp", "from jax.scipy.stats import vonmises"]
    assert lines[2].startswith("mean = ") and lines[3] == "assert jnp.isfinite(vonmises.logpdf(mean, 0.0))"
    alone = run_text(proposals[0], tmp_path)
    assert alone.returncode == 1 and "AssertionError" in alone.stderr
    fixed = proposals[0].replace("vonmises.logpdf(mean, 0.0)", "scipy.stats.vonmises.logpdf(mean, 0.0)")
    assert run_text("import scipy.stats\n" + fixed, tmp_path).returncode == 0


def test_the_traced_level_knows_a_call_it_holds_inlined_is_lost_to_a_written_back_script():
    def traced(f):
        return Encoder().closed_jaxpr(jax.make_jaxpr(f)(1.0))

    inlined = call_not_kept(traced(lambda m: vonmises.logpdf(m, 0.0)), INSIDE)
    assert "inside `logpdf`" in inlined and "no script written back from it calls `logpdf`" in inlined

    @jax.jit
    def logpdf(m):
        return jnp.where(m > 0, jnp.log(m), jnp.nan)

    assert call_not_kept(traced(lambda m: logpdf(m) + 1.0), INSIDE) == ""  # a `jit` of its name: kept
    assert call_not_kept(traced(lambda m: vonmises.logpdf(m, 0.0)), _with(fix="inner-where")) == ""
