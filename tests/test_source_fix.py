"""The fix of a non-finite value written into the reproducer (`reducer.faults.source_fix`): the inner
`where` around the user's call at the origin, as a diff; each rewrite runs through where the
original fails, and nothing is rewritten that is not the origin."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reducer.faults.source_fix import as_diff, in_float64, rewrites

OWN_CHECKS = Path(__file__).parent / "programs" / "own_checks"

MASKED_SQRT = ("import jax\nimport jax.numpy as jnp\n"
               "assert jnp.isfinite(jax.grad(lambda s: jnp.where(s > 0, jnp.sqrt(s), 0.0))(0.0))\n")
NORM = ("import jax\nimport jax.numpy as jnp\n"
        "assert jnp.isfinite(jax.grad(lambda x: jnp.linalg.norm(x) ** 2)(jnp.zeros(1))).all()\n")
ENTROPY = ("import jax\ng = jax.grad(lambda p: jax.numpy.where(p > 0, p * jax.numpy.log(p), 0.0))(0.0)\n"
           "assert jax.numpy.isfinite(g)\n")
DISTANCE = ("import jax\nimport jax.numpy as jnp\nfrom jax import lax\n"
            "d = jax.grad(lambda x: lax.sqrt(jnp.sum(x * x)))(jnp.zeros(3))\n"
            "assert jnp.isfinite(d).all(), d\nprint(float(jax.jit(lambda x: lax.sqrt(jnp.sum(x * x)))(jnp.ones(4))))\n")

#: the log-survival of a censored sample whose CDF is 1, masked: its gradient NaN
SURVIVAL = ("import jax\nimport jax.numpy as jnp\n"
            "assert jnp.isfinite(jax.grad(lambda c: jnp.where(c < 1, jnp.log1p(-c), 0.0))(1.0))\n")

#: a unit vector of a zero row: 0 / 0 forward
UNIT = ("import jax.numpy as jnp\nz = jnp.zeros(2)\nassert jnp.isfinite(z / jnp.linalg.norm(z)).all()\n"
        "assert (jnp.ones(2) / jnp.linalg.norm(jnp.ones(2)) == 0.5 ** 0.5).all()\n")

#: the angle of a vector at the origin: both arguments of `arctan2` are 0, its gradient NaN
ANGLE = ("import jax\nimport jax.numpy as jnp\n"
         "assert jnp.isfinite(jax.grad(lambda v: jnp.arctan2(v[1], v[0]))(jnp.zeros(2))).all()\n")

#: a compressive gain masked at padded frames (an unseen Equinox program's reduction): 0.3 * 0 ** -0.7 times 0
MASKED_POWER = ("import jax\nimport jax.numpy as jnp\n"
                "assert jnp.isfinite(jax.grad(lambda a: jnp.where(a > 0, a ** 0.3, 0.0) + a ** 2)(0.0))\n")


def runs(program: str, tmp_path) -> subprocess.CompletedProcess:
    path = tmp_path / "repro.py"
    path.write_text(program)
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("program, op, via, expected", [
    (MASKED_SQRT, "sqrt", "", "jnp.where(s > 0, jnp.sqrt(jnp.where(s > 0, s, 1.0)), 0.0)"),
    (NORM, "sqrt", "norm", "jnp.where(jnp.any(x != 0), jnp.linalg.norm(jnp.where(jnp.any(x != 0), x, 1.0)), 0.0)"),
    (ENTROPY, "log", "", "p * jax.numpy.log(jax.numpy.where(p > 0, p, 1.0))"),
    (SURVIVAL, "log1p", "", "jnp.log1p(jnp.where((-c) > -1, -c, 1.0))"),
    (MASKED_POWER, "pow", "power", "jnp.where(a > 0, jnp.where(a > 0, a, 1.0) ** 0.3, 0.0) + a ** 2"),
    ("import jax.numpy as jnp\ny = jnp.power(x, 0.5)\n", "pow", "power",
     "jnp.where(x > 0, jnp.power(jnp.where(x > 0, x, 1.0), 0.5), 0.0)"),
    (ANGLE, "atan2", "arctan2", "jnp.where((v[1] != 0) | (v[0] != 0), jnp.arctan2(jnp.where((v[1] != 0) | (v[0] != 0), "
                                "v[1], 0.0), jnp.where((v[1] != 0) | (v[0] != 0), v[0], 1.0)), 0.0)"),
])
def test_the_inner_where_is_written_as_the_faq_writes_it(program, op, via, expected):
    fixed = rewrites(program, op, via)
    assert len(fixed) == 1 and expected in fixed[0]
    diff = as_diff(program, fixed[0])
    changed = [line[0] for line in diff.splitlines()[2:] if line[:1] in "+-"]
    assert diff.startswith("--- repro.py\n+++ repro.py\n@@") and changed == ["-", "+"]


def test_a_rewrite_runs_through_where_the_original_fails_and_keeps_the_value(tmp_path):
    assert runs(DISTANCE, tmp_path).returncode == 1
    fixed = rewrites(DISTANCE, "sqrt")
    assert len(fixed) == 2  # both calls of the operation, the one a check reads first
    done = runs(fixed[0], tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "2.0", done.stderr  # sqrt(4) is still 2


def test_a_log1p_rewrite_runs_through_where_the_original_fails(tmp_path):
    assert runs(SURVIVAL, tmp_path).returncode == 1
    (fixed,) = rewrites(SURVIVAL, "log1p")
    done = runs(fixed, tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_two_argument_rewrite_runs_through_where_the_original_fails(tmp_path):
    assert runs(ANGLE, tmp_path).returncode == 1
    (fixed,) = rewrites(ANGLE, "atan2", "arctan2")
    done = runs(fixed + "assert jnp.arctan2(1.0, 1.0) == jax.numpy.pi / 4\n", tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_division_at_the_origin_moves_its_denominator_alone_and_runs_through(tmp_path):
    assert runs(UNIT, tmp_path).returncode == 1
    fixed = rewrites(UNIT, "div", "div")
    assert len(fixed) == 2 and "z / jnp.where(jnp.linalg.norm(z) != 0, jnp.linalg.norm(z), 1.0)" in fixed[0]
    done = runs(fixed[0], tmp_path)
    assert done.returncode == 0, done.stderr  # and the unit vector of a row that is not 0 is unchanged


def test_a_fractional_power_rewrite_moves_its_base_alone_and_runs_through(tmp_path):
    assert runs(MASKED_POWER, tmp_path).returncode == 1
    (fixed,) = rewrites(MASKED_POWER, "pow", "power")  # not the whole power `a ** 2`: finite everywhere
    done = runs(fixed + "assert jnp.where(True, 4.0 ** 0.5, 0.0) == 2.0\n", tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("program, op, via", [
    ("import jax\nassert jax.numpy.isfinite(jax.grad(jax.numpy.linalg.norm)(0.0))\n", "sqrt", "norm"),
    ("import jax\nimport jax.numpy as jnp\nassert jnp.isfinite(jax.grad(jnp.arctan2, 1)(0.0, 0.0))\n", "atan2", "arctan2"),
])
def test_a_function_passed_by_name_is_rewritten_as_a_lambda_that_runs_through(program, op, via, tmp_path):
    assert runs(program, tmp_path).returncode == 1
    (fixed,) = rewrites(program, op, via)
    assert "(lambda " in fixed and "jax.grad((lambda " in fixed
    done = runs(fixed, tmp_path)
    assert done.returncode == 0, done.stderr


def test_nothing_but_the_origin_is_rewritten():
    assert rewrites(MASKED_SQRT, "log") == []  # another operation
    assert rewrites("import jax.numpy as jnp\nprint(jnp.sqrt(4.0, out=None))\n", "sqrt") == []  # not one argument
    assert rewrites("def broken(:\n", "sqrt") == []


def test_the_report_shows_the_fix_as_a_diff_of_repro_py_on_its_first_screen():
    from oracles.base import Signature
    from reducer import bug_report

    sig = Signature("nonfinite", (("type", "AssertionError"), ("check", "assert"), ("value", "nan"), ("in", "grad"),
                                  ("op", "sqrt"), ("fix", "inner-where"), ("from", "sqrt")),
                    "A NaN from `sqrt` under `grad` fails the program's `assert`")
    summary = bug_report.ReductionSummary("train.py", 400, 40, 30.0, 100, 10, 5, "yes (3/3 runs)")
    text = bug_report.report(MASKED_SQRT, sig, "AssertionError", {}, summary, fixed_code=rewrites(MASKED_SQRT, "sqrt")[0])
    first = text.split("<details>")[0]
    assert "```diff\n--- repro.py\n+++ repro.py\n@@ -" in first and "the inner `where`" in first
    header = len(bug_report.reproducer(MASKED_SQRT, sig, {}, summary).splitlines()) - 3  # the diff's lines are repro.py's
    assert f"@@ -{header + 2}," in first or f"@@ -{header + 1}," in first, first


SOFTPLUS = ("import jax.numpy as jnp\nimport numpy as np\n\n"
            "np.testing.assert_allclose(jnp.log(1 + jnp.exp(100.0)), np.logaddexp(0, 100.0))\n")


def test_an_overflow_is_fixed_by_the_program_made_float64_after_its_imports_and_runs_through(tmp_path):
    assert runs(SOFTPLUS, tmp_path).returncode == 1
    fixed = in_float64(SOFTPLUS)
    assert fixed.splitlines()[2:4] == ["import jax", 'jax.config.update("jax_enable_x64", True)']
    done = runs(fixed, tmp_path)
    assert done.returncode == 0, done.stderr
    assert in_float64("import jax\nprint(1)\n").splitlines()[1] == 'jax.config.update("jax_enable_x64", True)'
    assert in_float64("import numpy\nprint(1)\n") is None and in_float64("def broken(:\n") is None


def test_the_report_of_an_overflow_says_float64_fixes_it_and_shows_the_diff():
    from oracles.base import Signature
    from reducer import bug_report

    sig = Signature("nonfinite", (("type", "AssertionError"), ("check", "assert_allclose"), ("value", "+inf"),
                                  ("in", "forward"), ("op", "exp"), ("fix", "float64"), ("from", "exp")),
                    "A +Inf from `exp` fails the program's `assert_allclose`")
    summary = bug_report.ReductionSummary("model.py", 600, 30, 30.0, 100, 10, 5, "yes (3/3 runs)")
    text = bug_report.report(SOFTPLUS, sig, "AssertionError", {}, summary, fixed_code=in_float64(SOFTPLUS))
    first = text.split("<details>")[0]
    assert "computed in float64" in first and "+jax.config.update" in first, first
    assert "`exp` overflows float32" in first and "inside its domain" not in first, first


def test_the_report_of_an_overflow_of_float64_too_names_jaxs_function_and_shows_its_diff():
    from oracles.base import Signature
    from reducer import bug_report
    from reducer.faults import stable_fix

    program = SOFTPLUS.replace("100.0", "1000.0")
    sig = Signature("nonfinite", (("type", "AssertionError"), ("check", "assert_allclose"), ("value", "+inf"),
                                  ("in", "forward"), ("op", "exp"), ("fix", "softplus"), ("from", "exp")),
                    "A +Inf from `exp` fails the program's `assert_allclose`")
    summary = bug_report.ReductionSummary("model.py", 600, 30, 30.0, 100, 10, 5, "yes (3/3 runs)")
    fixed = stable_fix.rewritten(program, "softplus")
    text = bug_report.report(program, sig, "AssertionError", {}, summary, fixed_code=fixed)
    first = text.split("<details>")[0]
    assert "+np.testing.assert_allclose(jax.nn.softplus(1000.0)" in first and "computed by `jax.nn.softplus`" in first
    assert "the program made float64 still fails" in first and "jax_enable_x64" not in first, first


def test_the_report_of_a_rounding_below_a_domain_names_the_arithmetic_and_the_program_as_its_owner():
    from oracles.base import Signature
    from reducer import bug_report

    program = ("import numpy\nimport jax.numpy as jnp\nx = jnp.asarray(numpy.load('inputs.npz')['a'])\n"
               "assert jnp.isfinite(jnp.sqrt(jnp.mean(x ** 2) - jnp.mean(x) ** 2))\n")
    sig = Signature("nonfinite", (("type", "AssertionError"), ("check", "assert"), ("value", "nan"), ("in", "forward"),
                                  ("op", "sqrt"), ("cause", "integer_pow+reduce_sum-rounding"),
                                  ("fix", "float64-arithmetic"), ("from", "sqrt")),
                    "A NaN from `sqrt` fails the program's `assert`")
    summary = bug_report.ReductionSummary("model.py", 600, 30, 30.0, 100, 10, 5, "yes (3/3 runs)")
    first = bug_report.report(program, sig, "AssertionError", {}, summary).split("<details>")[0]
    assert "`integer_pow`, `reduce_sum` evaluated in float64" in first and "float32's rounding" in first, first
    assert "`jnp.var`" in first and "not a bug of JAX" in first and "inner `where` JAX's FAQ" not in first, first
    assert "`integer_pow`, `reduce_sum` computed in float64" in first, first  # the fix, where to file


def test_the_report_of_jaxs_own_nan_check_says_where_the_nan_comes_from_and_whose_it_is():
    """JAX's `FloatingPointError` under `jax.debug_nans` with its origin located: the program's
    arithmetic, not JAX's, and the words of the rounding that made the 0 at `log`'s pole."""
    from oracles.base import Signature
    from reducer import bug_report

    program = ("import jax\nimport jax.numpy as jnp\nwith jax.debug_nans(True):\n"
               "    jax.grad(lambda z: jnp.log(1.0 - jax.nn.sigmoid(z)))(23.0)\n")
    sig = Signature("jax-error", (("library", "jax"), ("type", "FloatingPointError"),
                                  ("raised-in", "jax/_src/pjit.py:_run_python_pjit"),
                                  ("message", "invalid value (nan) encountered in mul"), ("value", "nan"),
                                  ("in", "grad"), ("op", "log"), ("point", "pole"), ("cause", "rounding"),
                                  ("fix", "inner-where"), ("from", "log")),
                    "A NaN from `log` under `grad` fails JAX's NaN check: invalid value (nan) encountered in mul")
    summary = bug_report.ReductionSummary("survival.py", 600, 30, 30.0, 100, 10, 5, "yes (3/3 runs)")
    first = bug_report.report(program, sig, "FloatingPointError", {}, summary).split("<details>")[0]
    assert "JAX's own NaN or Inf check" in first and "float32's rounding" in first, first
    assert "not a bug of JAX" in first and "inner `where` JAX's FAQ" in first, first  # the fix, where to file
    assert "JAX raised the failure only because the program asked it" in first, first
    assert "no library raised" not in first, first
    plain = Signature("jax-error", sig.fields[:4], "JAX: `FloatingPointError`")
    assert "JAX's own NaN" not in bug_report.report(program, plain, "FloatingPointError", {}, summary)


def test_an_overflow_in_a_float32_layer_is_fixed_by_its_operation_given_float64_too(tmp_path):
    """A Flax layer's output stays float32 in a float64 program: the fix gives `exp` its argument in float64."""
    program = OWN_CHECKS.joinpath("linen_float32_params_exp_overflow.py").read_text()
    assert runs(in_float64(program), tmp_path).returncode == 1
    fixed = in_float64(program, "exp")
    assert "jnp.exp(jnp.asarray(r, jnp.float64))" in fixed and 'jax.config.update("jax_enable_x64", True)' in fixed
    done = runs(fixed, tmp_path)
    assert done.returncode == 0, done.stderr
    assert in_float64("import jax\nprint(1)\n", "exp") is None


UNDERFLOWED = ("import jax.numpy as jnp\n\n"
               "z = jnp.array([-2000.0, -2100.0])\n"
               "loss = -jnp.log(jnp.sum(jnp.exp(z)))\n"
               "assert jnp.isfinite(loss), loss\n")


def test_a_log_of_an_underflowed_exp_in_a_formula_is_fixed_by_jaxs_function_and_the_report_says_so(tmp_path):
    """`log(sum(exp(z)))` whose every term underflowed (`fix=logsumexp`, `cause=exp-underflow`):
    `jax.nn.logsumexp` is written into the reproducer, and the report says why in the words of an
    underflow, not an overflow."""
    from oracles.base import Signature
    from reducer import bug_report, fixes
    from reducer.reduce import Options, Reduction

    script = tmp_path / "mdn.py"
    script.write_text(UNDERFLOWED)
    sig = Signature("nonfinite", (("type", "AssertionError"), ("check", "assert"), ("value", "+inf"),
                                  ("in", "forward"), ("op", "log"), ("point", "pole"), ("cause", "exp-underflow"),
                                  ("fix", "logsumexp"), ("from", "log")),
                    "A +Inf from `log` fails the program's `assert`")
    job = Reduction(script, tmp_path / "out", Options(jobs=1))
    try:
        fixed = fixes.written_fix(job, UNDERFLOWED, sig)
    finally:
        job.close()
    assert "\nloss = -jax.nn.logsumexp(z)\n" in fixed and runs(fixed, tmp_path).returncode == 0
    summary = bug_report.ReductionSummary("mdn.py", 400, 30, 30.0, 100, 10, 5, "yes (3/3 runs)")
    first = bug_report.report(UNDERFLOWED, sig, "AssertionError", {}, summary, fixed_code=fixed).split("<details>")[0]
    assert "With the formula written by hand computed by `jax.nn.logsumexp`, it runs through" in first, first
    assert "`exp` underflows to 0 in every term" in first and "overflows" not in first, first
    assert "+loss = -jax.nn.logsumexp(z)" in first, first
