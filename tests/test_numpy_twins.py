"""JAX's NumPy and SciPy functions computed by the functions they document they implement
(reducer/faults/numpy_twins.py): the fix a program that compares JAX with NumPy is held to, and the
loopholes it closes. Real runs of `jnp.modf(inf)`, whose fractional part is NaN in JAX 0.10.2 and 0.0
in NumPy."""
from __future__ import annotations

import contextlib

import pytest

from conftest import run_text
from oracles.outcome import Signature
from reducer import counterfactual
from reducer.faults import numpy_twins

ORIGINAL = ("import jax.numpy as jnp, numpy as np\n"
            "x = np.array([np.inf, -np.inf, 2.5], np.float32)\n"
            "frac, whole = jnp.modf(jnp.asarray(x))\n"
            "assert np.array_equal(np.asarray(frac), np.modf(x)[0]), frac\n")
#: candidates that fail as the original does, on the same check, but not because of `jnp.modf`
LOOPHOLES = {
    "another input": ("import jax.numpy as jnp, numpy as np\n"
                      "assert np.array_equal(jnp.modf(jnp.inf)[0], np.modf(2.5)[0])\n"),
    "numpy alone": "import numpy as np\nassert np.modf(np.inf)[0] == 1.0\n",
    # NumPy sums int8 in int64, JAX wraps: a documented difference of promotion, not a wrong value
    "numpy's promotion": ("import jax.numpy as jnp, numpy as np\nx = np.full(3, 100, np.int8)\n"
                          "np.testing.assert_array_equal(jnp.cumsum(x), np.cumsum(x.astype(np.int64)))\n"),
    "a constant": "import jax.numpy as jnp, numpy as np\nfrac = jnp.modf(jnp.inf)[0]\nassert np.isclose(jnp.sin(0.0), np.log(2.0))\n",
}


def test_a_program_comparing_jax_with_numpy_is_held_to_the_twins():
    located = Signature("nonfinite", (("check", "assert"), ("value", "nan"), ("op", "sub"), ("fix", "none")))
    assert counterfactual.modes(located, ORIGINAL) == ["numpy"]  # no fix of the program's: the reference's
    assert counterfactual.modes(located, "import jax.numpy as jnp\n") == []
    close = Signature("own-check", (("type", "AssertionError"), ("check", "assert"), ("reads", "close")))
    assert counterfactual.modes(close, ORIGINAL) == ["numpy"]  # held, where float64 does not fix it too
    assert counterfactual.CONTROLS["numpy"] == "float64"
    fixed = Signature("nonfinite", (("check", "assert"), ("value", "nan"), ("op", "log"), ("fix", "where")))
    assert counterfactual.modes(fixed, ORIGINAL) == []  # its origin's fix is the program's
    assert counterfactual.OWNERS["numpy"] == "jax"


def test_names_and_namesakes():
    assert numpy_twins.named_in(ORIGINAL).index("modf") < numpy_twins.named_in(ORIGINAL).index("array_equal")
    assert "array" not in numpy_twins.named_in(ORIGINAL)  # it makes arrays, computes nothing
    assert numpy_twins.namesakes("modf") == ("jax.numpy.modf", "numpy.modf")
    assert numpy_twins.namesakes("spence") == ("jax.scipy.special.spence", "scipy.special.spence")
    assert numpy_twins.namesakes("jnp") is None and numpy_twins.namesakes("ndarray") is None
    assert numpy_twins.line(("modf",)).endswith("_reducer_numpy_twins(('modf',))")


def test_the_original_runs_through_with_jax_s_function_computed_by_numpy_s(tmp_path):
    assert run_text(ORIGINAL, tmp_path).returncode == 1
    assert run_text(counterfactual.fixed(ORIGINAL, "numpy"), tmp_path).returncode == 0
    only = ORIGINAL.replace("import jax.numpy", numpy_twins.line(("modf",)) + "\nimport jax.numpy", 1)
    assert run_text(only, tmp_path).returncode == 0
    other = ORIGINAL.replace("import jax.numpy", numpy_twins.line(("sin",)) + "\nimport jax.numpy", 1)
    assert run_text(other, tmp_path).returncode == 1


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LOOPHOLES))
def test_a_loophole_fails_as_the_original_but_not_because_of_jax_s_function(tmp_path, name):
    assert run_text(LOOPHOLES[name], tmp_path).returncode == 1
    assert run_text(counterfactual.fixed(LOOPHOLES[name], "numpy"), tmp_path).returncode == 1


def test_under_a_transformation_jax_s_function_is_kept(tmp_path):
    """Traced values (under `grad`) keep JAX's function; a ufunc's other methods are JAX's."""
    program = (numpy_twins.LINE + "\nimport jax, jax.numpy as jnp\n"
               "print(jax.grad(lambda x: jnp.sin(x))(0.0), type(jnp.sin).__name__, jnp.add.reduce(jnp.ones(3)))\n")
    run = run_text(program, tmp_path)
    assert run.returncode == 0 and run.stdout.split() == ["1.0", "Twin", "3.0"], run.output


#: a program that runs through with the twins in place, or in float64: as a check too tight for float32's
#: rounding that NumPy's algorithm happens to meet would
EITHER = ("import jax, jax.numpy as jnp\n"
          "assert jax.config.jax_enable_x64 or type(jnp.sin).__name__ == 'Twin'\n")


#: a check that fails now on XLA's simplification of `(a / b) / b` under `jit` (to `a / (b * b)`, which
#: overflows and underflows), not on JAX's function: the twins, which run `jit` op by op, take it away too
ON_JIT = ("import jax, numpy as np\n"
          "a, b = np.array([1e30, 1e-30], np.float32), np.array([1e20, 1e-20], np.float32)\n"
          "np.testing.assert_allclose(jax.jit(lambda a, b: (a / b) / b)(a, b), a / b / b, rtol=1e-5)\n")


@contextlib.contextmanager
def job_for(tmp_path, program: str):
    """A reduction's job for `program`, whose sandbox runs the fixes."""
    from reducer.reduce import Options, Reduction

    script = tmp_path / "program.py"
    script.write_text(program)
    job = Reduction(script, None, Options(oracle="auto", jobs=1, runs=1))
    try:
        yield job
    finally:
        job.close()


@pytest.mark.slow
def test_a_finite_difference_float64_takes_away_too_is_not_jax_s(tmp_path):
    with job_for(tmp_path, EITHER) as job:
        assert counterfactual.runs_clean(job, EITHER, "numpy") and counterfactual.runs_clean(job, EITHER, "float64")
        assert not counterfactual.fixes_the_failure(job, EITHER, "numpy")  # a finite value: float64 is its control
        located = Signature("nonfinite", (("check", "assert"), ("value", "nan"), ("fix", "none")))
        assert counterfactual.fixes_the_failure(job, EITHER, "numpy", located)  # an overflow inside JAX's function


@pytest.mark.slow
def test_the_function_at_fault_is_named_by_halving(tmp_path):
    from reducer import fixes

    with job_for(tmp_path, ORIGINAL) as job:
        assert fixes.twin_at_fault(job, ORIGINAL, 2.0) == ("jax.numpy.modf", "numpy.modf")
        assert fixes.twin_at_fault(job, LOOPHOLES["numpy alone"], 2.0) is None


def test_a_check_that_fails_on_xla_s_jit_instead_is_not_held_to_the_twins(tmp_path):
    assert run_text(ON_JIT, tmp_path).returncode == 1
    with job_for(tmp_path, ORIGINAL) as job:
        assert not counterfactual.runs_clean(job, ON_JIT, "numpy")  # the twins keep `jit`: XLA's rewrite stays
        assert not counterfactual.survives(job, ON_JIT, "numpy")  # and op by op alone takes it away
        assert counterfactual.survives(job, ORIGINAL, "numpy")  # JAX's `modf` is wrong with or without `jit`


def test_inside_a_compiled_function_the_twin_is_called_back_and_its_derivative_is_jax_s(tmp_path):
    """`jit` stays on: a call inside a compiled function gets the namesake's value (`chi2.logpdf(0, 2)`
    is log(1/2), not JAX's NaN; `jnp.sum`'s static `axis` is given to NumPy as it is), its derivative
    JAX's function's; a call on values being differentiated or batched keeps JAX's function, and so
    does one whose value is Python's, not traced (`jnp.isrealobj`, which Optax's `if` reads)."""
    program = (numpy_twins.LINE + "\nimport jax, jax.numpy as jnp, jax.scipy.stats as jst\n"
               "f = jax.jit(lambda x: jst.chi2.logpdf(x, 2.0))\n"
               "g = jax.grad(lambda x: jax.jit(lambda x: jst.chi2.logpdf(x, 2.0).sum())(x))(jnp.array([0.5, 1.0]))\n"
               "print(f(jnp.zeros(1))[0], g[0], jax.jit(lambda x: jnp.sum(x, axis=0))(jnp.ones((2, 3)))[0],\n"
               "      jax.vmap(lambda x: jst.chi2.logpdf(x, 2.0))(jnp.zeros(1))[0], jax.config.jax_disable_jit,\n"
               "      jax.jit(lambda x: x * 3 if jnp.isrealobj(x) else x)(jnp.ones(1))[0])\n")  # Python's bool, as it is
    run = run_text(program, tmp_path)
    assert run.returncode == 0 and run.stdout.split() == ["-0.6931472", "-0.5", "2.0", "nan", "False", "3.0"], \
        run.output


#: JAX's `chi2.logpdf(0, 2)` is `0 * log(0)`, NaN, where SciPy's is log(1/2): the inner `where` on `log`
#: (patched into JAX's primitive, inside `logpdf`) takes it away too, but no program can write it there
INSIDE_LOGPDF = ("import numpy as np, scipy.stats\nimport jax.scipy.stats as jst\n"
                 "np.testing.assert_allclose(jst.chi2.logpdf(0.0, 2.0), scipy.stats.chi2.logpdf(0.0, 2.0))\n")


@pytest.mark.slow
def test_twins_that_fix_the_original_are_found_before_the_traced_level_which_is_then_not_run(tmp_path):
    """An unseen Flax program's chi2 calibration check: the traced level took `log` alone out of
    `logpdf` and called the reproducer the program's `0.0 * jnp.log(0.0)`."""
    from reducer.levels.jaxpr.level import JaxprLevel

    with job_for(tmp_path, INSIDE_LOGPDF) as job:
        established, _ = job.begin()
        assert established.fix == numpy_twins.FIX
        assert "NumPy or SciPy function it implements" in JaxprLevel(("jaxpr", "source"), job.rep).why_not(
            established, INSIDE_LOGPDF)


def test_the_traced_level_is_out_of_reach_only_of_the_twins_fix():
    from reducer.levels.jaxpr.traceable import out_of_reach

    sig = Signature("nonfinite", (("check", "assert_allclose"), ("value", "nan"), ("op", "log")))
    assert out_of_reach(INSIDE_LOGPDF, sig, numpy_twins.FIX) and not out_of_reach(INSIDE_LOGPDF, sig, "jit")
    assert not out_of_reach(INSIDE_LOGPDF, sig)


#: a program that fails compiled and passes op by op, slower op by op than its timeout allows a candidate
SLOWER_OP_BY_OP = ("import time, jax\n"
                   "if jax.config.jax_disable_jit:\n    time.sleep(4)\n"
                   "assert jax.config.jax_disable_jit\n")


@pytest.mark.slow
def test_a_fix_that_runs_op_by_op_gets_more_time_than_a_candidate(tmp_path):
    """An unseen Flax program's 400 training steps ran 52 s op by op, 6 s compiled: within its
    candidates' timeout (24 s) the twins seemed not to fix it, and its NaN went to the program."""
    from reducer.reduce import Options, Reduction

    script = tmp_path / "program.py"
    script.write_text(SLOWER_OP_BY_OP)
    job = Reduction(script, None, Options(oracle="auto", jobs=1, runs=1, timeout=3.0))
    try:
        assert job.candidate_limits().timeout == 3.0
        assert counterfactual.runs_clean(job, SLOWER_OP_BY_OP, "jit")  # 4 s of its 12
        assert not counterfactual.runs_clean(job, SLOWER_OP_BY_OP, "float64")  # compiled: it fails
    finally:
        job.close()
