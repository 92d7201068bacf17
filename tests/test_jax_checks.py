"""JAX's NaN and Inf checks as the tool switches them on (`reducer.faults.jax_checks`), on real runs:
they stop where a value is made or chosen, not where a value already made is only moved."""
from __future__ import annotations

from conftest import run_text
from reducer.faults import nonfinite
from reducer.faults.jax_checks import PASSED_ON

#: a NaN constant JAX's `vonmises.logpdf` converts on every call and chooses only where kappa is 0: the
#: first line does not make the program's NaN, the second does
UNCHOSEN_CONSTANT = ("import jax.numpy as jnp\nfrom jax.scipy.stats import vonmises\n"
                     "a = vonmises.logpdf(jnp.zeros(2), 4.0)\n"
                     "b = vonmises.logpdf(jnp.zeros(2), 0.0)\n"
                     "assert jnp.isfinite(a + b).all()\n")


def test_jax_s_own_checks_op_by_op_stop_at_a_constant_that_is_converted_and_not_chosen(tmp_path):
    """The loophole: with `jax_debug_nans` alone, op by op, the first line is named, though its value is
    finite (its line is the 3rd of the program, after the line that switches the checks on)."""
    checks = "import jax; jax.config.update('jax_debug_nans', True); jax.config.update('jax_disable_jit', True)\n"
    run = run_text(checks + UNCHOSEN_CONSTANT, tmp_path)
    found = nonfinite.read(run.output, UNCHOSEN_CONSTANT)
    assert found["prim"] == "convert_element_type" and found["at"].endswith(":4"), run.output


def test_op_by_op_the_checks_stop_where_the_constant_is_chosen(tmp_path):
    run = run_text(nonfinite.with_checks(UNCHOSEN_CONSTANT, infs=True, eager=True), tmp_path)
    found = nonfinite.read(run.output, UNCHOSEN_CONSTANT)
    assert (found["prim"], found["from"], found["at"].endswith(":4")) == ("select_n", "logpdf", True), run.output


def test_compiled_the_checks_do_not_stop_where_the_constant_is_only_moved(tmp_path):
    """`jnp.where`'s compiled `_broadcast_arrays` gets the converted constant: JAX's checks stopped the
    program there, its de-optimized run finding nothing to name; now nothing stops it but its own check
    (and the caller runs it op by op)."""
    run = run_text(nonfinite.with_checks(UNCHOSEN_CONSTANT, infs=True), tmp_path)
    assert "AssertionError" in run.output and "did not produce invalid values" not in run.output, run.output


def test_a_nan_written_in_is_made_by_no_operation(tmp_path):
    """`jnp.float32(jnp.nan)` only converts a constant: the checks meet nothing, and the check fails."""
    program = "import jax.numpy as jnp\nassert jnp.isfinite(jnp.float32(jnp.nan))\n"
    run = run_text(nonfinite.with_checks(program, infs=False), tmp_path)
    assert "AssertionError" in run.output and nonfinite.read(run.output, program) is None, run.output


def test_a_conversion_that_narrows_a_finite_value_to_inf_is_still_checked(tmp_path):
    program = ("import jax, jax.numpy as jnp\njax.config.update('jax_enable_x64', True)\n"
               "assert jnp.isfinite(jnp.asarray(1e300, jnp.float64).astype(jnp.float32))\n")
    run = run_text(nonfinite.with_checks(program, infs=True), tmp_path)
    found = nonfinite.read(run.output, program)
    assert (found["kind"], found["prim"], found["passed_on"]) == ("inf", "convert_element_type", False), run.output


def test_a_value_a_compiled_call_let_through_is_not_named_compiled_and_op_by_op_is_met_where_chosen(tmp_path):
    """Under `jit` and `value_and_grad`, JAX's checks missed the NaN `vonmises.logpdf` chooses and stopped
    at the conversion in `0.01 * prior`, a line that only reads it; now the compiled run stops at no
    operation, or says the one it stops at was passed the value, and op by op the checks stop inside
    `logpdf`, where it is chosen."""
    program = ("import jax, jax.numpy as jnp\nfrom jax.scipy.stats import vonmises\n"
               "def loss(mu):\n"
               "    prior = -vonmises.logpdf(mu, 0.0).mean()\n"
               "    return -vonmises.logpdf(mu, 4.0).mean() + 0.01 * prior\n"
               "value, _ = jax.jit(jax.value_and_grad(loss))(jnp.zeros(3))\n"
               "assert jnp.isfinite(value)\n")
    compiled = run_text(nonfinite.with_checks(program, infs=False), tmp_path)
    found = nonfinite.read(compiled.output, program)
    assert found is None or found["passed_on"] and \
        PASSED_ON.format(prim=found["prim"], kind="nan") in compiled.output, compiled.output
    eager = run_text(nonfinite.with_checks(program, infs=False, eager=True), tmp_path)
    found = nonfinite.read(eager.output, program)
    assert (found["prim"], found["from"], found["at"].endswith(":4")) == ("select_n", "logpdf", True), eager.output


def test_a_comment_on_the_line_names_no_call(tmp_path):
    """`# … -log(2 pi)` beside the call: the call is `logpdf`, not the `log` the comment writes (a
    reduction held the value to `from=log`, and no way of computing `log` right passed)."""
    program = ("import jax.numpy as jnp\nfrom jax.scipy.stats import vonmises\n"
               "p = vonmises.logpdf(jnp.zeros(2), 0.0)  # kappa = 0: uniform, log-density -log(2 pi)\n"
               "assert jnp.isfinite(p).all()\n")
    run = run_text(nonfinite.with_checks(program, infs=False, eager=True), tmp_path)
    found = nonfinite.read(run.output, program)
    assert (found["op"], found["from"]) == ("select_n", "logpdf"), run.output


def test_a_block_that_turns_the_checks_off_and_ends_leaves_the_compiled_calls_after_it_checked(tmp_path):
    """JAX 0.10.2 turns its check of compiled calls off for the thread when a `with
    jax.debug_nans(False)` block ends (JAX runs one inside `jnp.var`, and inside a custom rule's
    round trip, in a training step); once no block is in effect, the flags' global values decide
    again: a later run of a compiled `log` of 0 is met where it is made."""
    program = ("import jax\nimport jax.numpy as jnp\n"
               "with jax.debug_nans(False):\n    pass\n"
               "step = jax.jit(lambda a: jnp.log(a) * 2.0)\n"
               "step(jnp.ones(2))\n"  # a compiled call's later runs take JAX's fast path, where the bug is
               "assert jnp.isfinite(step(jnp.zeros(2))).all()\n")
    run = run_text(nonfinite.with_checks(program, infs=True), tmp_path)
    found = nonfinite.read(run.output, program)
    assert run.returncode == 1 and nonfinite.met(found), run.stderr[-800:]
    assert (found["op"], found["in"], found["at"].split(":")[-1]) == ("log", "forward", "5")  # inside the compiled lambda
    plain = run_text(program.replace("import jax\n", "import jax\njax.config.update('jax_debug_infs', True)\n"),
                     tmp_path)
    assert "FloatingPointError" not in plain.stderr and "AssertionError" in plain.stderr  # JAX's own: off
