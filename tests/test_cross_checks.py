"""The harness and its watches on real programs: crashes named by the crashing thread, checks that
only observe, jit-versus-op-by-op comparison, the operation at fault. Real JAX, Enzyme-JAX, real
segfaults; no mocks."""
import os

import pytest

import oracles
from conftest import PROGRAMS, needs_enzyme, reducer_cli
from reducer import harness
from reducer.workers.sandbox import Limits, Sandbox


def run_in(tmp_path, name, **kw):
    box = Sandbox(tmp_path / "runs", script_name=f"{name}.py", check_gradients=True, **kw)
    try:
        return box.run((PROGRAMS / f"{name}.py").read_text(), Limits(timeout=180))
    finally:
        box.close()


@pytest.mark.slow
def test_xla_thread_crash_names_the_call_not_where_the_main_thread_was(tmp_path):
    # jax-ml/jax#40412: with asynchronous dispatch the fault lands on an XLA worker thread while the
    # main thread is anywhere (the runner's own `restore`, `kill_strays` …)
    seen = set()
    for _ in range(2):  # the same warm worker runs it twice, as a reduction would
        run = run_in(tmp_path, "rank7_sum_segfault", warm=True)
        seen.add(oracles.detect(run)[1])
    assert [sig.get("detail") for sig in seen] == ["SIGSEGV in jax/_src/interpreters/pxla.py:__call__"]


def test_crash_in_an_exit_handler_counts_in_a_warm_runner(tmp_path):
    run = run_in(tmp_path, "exit_handler_segfault", warm=True)
    assert run.signal == 11
    assert oracles.detect(run)[1].get("detail") == "SIGSEGV in ctypes/__init__.py:string_at"


@needs_enzyme
def test_forward_only_enzyme_program_does_not_fail():
    done = reducer_cli("check", PROGRAMS / "sort_enzyme_forward.py", timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "does not fail" in done.stderr


def test_checks_write_nothing_into_the_programs_output(tmp_path, capfd):
    log = tmp_path / "checks.log"
    with harness._quiet(str(log)):
        print("from the check")
        os.write(2, b"native noise\n")
    print("from the program")
    out, err = capfd.readouterr()
    assert out == "from the program\n" and err == ""
    assert log.read_text() == "from the check\nnative noise\n"


def test_result_watch_finds_the_miscompiled_operation():
    import jax
    import jax.numpy as jnp

    from reducer.cross_checks.results import ResultWatch

    watch = ResultWatch()
    watch.install()
    try:
        i = jnp.arange(32_769, dtype=jnp.float32)
        points = jnp.stack((i, jnp.zeros_like(i), jnp.zeros_like(i)), axis=1)
        norms = jax.jit(lambda x: jax.vmap(lambda row: jnp.sum((jnp.eye(3) @ row) ** 2))(x))
        norms(points)
        fine = jax.jit(lambda x: x * 2.0)
        fine(points)
        assert norms.lower(points) is not None  # the proxy still is the compiled function
    finally:
        watch.uninstall()
    assert jax.jit is watch.orig
    bad, good = watch.check()
    assert bad["mismatch"] and bad["operation"] == "reduce_sum" and bad["index"] == [32768]
    assert not good["mismatch"]


@needs_enzyme
def test_gradient_watch_samples_only_what_the_program_differentiates():
    import jax
    import jax.numpy as jnp

    from reducer.cross_checks.gradients import GradientWatch

    watch = GradientWatch()
    watch.install()
    try:
        from enzyme_ad.jax import enzyme_jax_ir

        forward = enzyme_jax_ir()(lambda x: jnp.sort(x))
        jax.jit(forward)(jnp.array([2.0, 1.0]))
        assert watch.samples == []  # called, never differentiated
        target = enzyme_jax_ir()(lambda x, y: jax.lax.stop_gradient(x) * y)
        jax.jit(jax.grad(target, argnums=1))(1.5, 2.0)
    finally:
        watch.uninstall()
    (sample,) = watch.samples
    assert sample.active == (1,)  # only y was differentiated
    (check,) = watch.check()
    assert not check["mismatch"]  # d/dy is x on both sides; Enzyme's mistake is in d/dx, never taken


@pytest.mark.parametrize("name", ["jit_miscompare", "stop_gradient_mismatch"])
def test_watch_finds_the_operation_in_a_real_run(tmp_path, name):
    run = run_in(tmp_path, name)
    sig = oracles.detect(run)[1]
    assert sig.get("op") == {"jit_miscompare": "reduce_sum", "stop_gradient_mismatch": "stop_gradient"}[name]


@needs_enzyme
def test_gradient_watch_compares_in_the_programs_own_mode():
    import jax
    import jax.numpy as jnp

    from reducer.cross_checks.gradients import GradientWatch

    watch = GradientWatch()
    watch.install()
    try:
        from enzyme_ad.jax import enzyme_jax_ir

        damped = enzyme_jax_ir()(lambda x: jax.lax.stop_gradient(x) * x)
        jax.jit(lambda x: jax.jvp(damped, (x,), (jnp.ones_like(x),)))(2.0)
    finally:
        watch.uninstall()
    (check,) = watch.check()
    assert check["mode"] == "forward" and check["mismatch"]
    assert (check["enzyme"], check["reference"], check["operation"]) == ([[4.0]], [[2.0]], "stop_gradient")


@needs_enzyme
def test_the_first_disagreeing_operation_wins_over_later_ones():
    # the TD loss of corpus/activity-mismatch-…-stop-gradient-…/original.py: the prefix ending at
    # `tanh(s * w)` agrees again after `stop_gradient` disagreed, so bisection alone would name `sub`
    import jax
    import jax.numpy as jnp
    from enzyme_ad.jax import enzyme_jax_ir

    from reducer.cross_checks.gradients import Sample, _compare

    def td_loss(w, s, r, s_next):
        target = r + 0.9 * jax.lax.stop_gradient(jnp.tanh(s_next * w))
        return jnp.mean((jnp.tanh(s * w) - target) ** 2)

    sample = Sample("td_loss", td_loss, (jnp.float32(0.5), 1.0, 1.0, 1.0), {}, (0,), "reverse", enzyme_jax_ir())
    check = _compare(sample)
    assert check["mismatch"] and check["operation"] == "stop_gradient"


@pytest.mark.slow
@needs_enzyme
def test_a_fresh_run_says_which_derivative_finite_differences_support_and_a_warm_one_pays_nothing(tmp_path):
    box = Sandbox(tmp_path / "runs", script_name="digamma_mismatch.py", check_gradients=True, warm=True)
    source = (PROGRAMS / "digamma_mismatch.py").read_text()
    try:
        fresh = oracles.detect(box.run(source, Limits(timeout=180), fresh=True))[1]
        warm = oracles.detect(box.run(source, Limits(timeout=180)))[1]
    finally:
        box.close()
    assert fresh == warm and fresh.get("op") == "digamma"  # the explanation is not part of the signature
    assert "Enzyme-JAX's derivative of `digamma`" in fresh.excerpt and "finite differences" in fresh.excerpt
    assert "Enzyme-JAX's derivative is the wrong one" in fresh.excerpt, fresh.excerpt
    assert "finite differences" not in warm.excerpt
