"""The operation at fault (`reducer.cross_checks.locate`): the wanted operation confirmed in two tests,
the whole search whenever it is not the one at fault, and the job handing the wanted operation to
every candidate. Real JAX and Enzyme-JAX derivatives and miscompiles; no mocks."""
import pytest

from conftest import PROGRAMS, needs_enzyme


def _entry(check):
    return check["operation"], check["locate_tests"]


def _gradient_check(fun, args, monkeypatch, wanted=None):
    """The gradient watch's check of `fun` at `args`, differentiated in its first argument."""
    from enzyme_ad.jax import enzyme_jax_ir

    from reducer.cross_checks.gradients import Sample, _compare
    from reducer.cross_checks.locate import WANTED_ENV

    if wanted:
        monkeypatch.setenv(WANTED_ENV, wanted)
    else:
        monkeypatch.delenv(WANTED_ENV, raising=False)
    return _compare(Sample(fun.__name__, fun, args, {}, (0,), "reverse", enzyme_jax_ir()))


def dirichlet_like(log_alpha, log_p):
    # the shape of benchmarks/cases/dirichlet_digamma_enzyme.py: lgamma (right) before digamma (wrong)
    import jax
    import jax.numpy as jnp

    alpha = jnp.exp(log_alpha)
    norm = jax.lax.lgamma(alpha.sum()) - jax.lax.lgamma(alpha).sum()
    fit = ((alpha - 1.0) * log_p).sum(-1).mean()
    return norm + fit + 1e-3 * jax.scipy.special.digamma(jnp.exp(log_alpha)).sum()


@pytest.mark.slow
@needs_enzyme
def test_the_wanted_operation_is_confirmed_in_two_tests_and_the_search_agrees(monkeypatch):
    import jax.numpy as jnp

    args = (jnp.zeros(3), jnp.log(jnp.full((4, 3), 1 / 3)))
    searched = _gradient_check(dirichlet_like, args, monkeypatch)
    confirmed = _gradient_check(dirichlet_like, args, monkeypatch, wanted="digamma")
    assert searched["mismatch"] and confirmed["mismatch"]
    assert searched["operation"] == confirmed["operation"] == "digamma"
    assert confirmed["locate_tests"] == 2 < searched["locate_tests"]
    assert confirmed["inputs"] == searched["inputs"] == [[1.0, 1.0, 1.0]]


@needs_enzyme
@pytest.mark.parametrize("wanted", ["tanh", "digamma", "mul"])
def test_a_wanted_operation_not_at_fault_gets_the_whole_search(monkeypatch, wanted):
    # the TD loss of corpus/activity-mismatch-…-stop-gradient-…: Enzyme-JAX's fault is stop_gradient;
    # tanh and mul are there and right, digamma is absent: none of them may take its name
    import jax
    import jax.numpy as jnp

    def td_loss(w, s, r, s_next):
        target = r + 0.9 * jax.lax.stop_gradient(jnp.tanh(s_next * w))
        return jnp.mean((jnp.tanh(s * w) - target) ** 2)

    args = (jnp.float32(0.5), 1.0, 1.0, 1.0)
    plain = _gradient_check(td_loss, args, monkeypatch)
    check = _gradient_check(td_loss, args, monkeypatch, wanted=wanted)
    assert check["operation"] == plain["operation"] == "stop_gradient"
    assert check["locate_tests"] >= plain["locate_tests"]


@pytest.mark.slow
@needs_enzyme
def test_the_wanted_operation_is_found_inside_a_call(monkeypatch):
    import jax
    import jax.numpy as jnp

    inner = jax.jit(lambda x: jnp.sin(x) * jax.scipy.special.digamma(x))

    def wrapped(x):
        return jnp.sum(inner(jnp.exp(x)) + x)

    args = (jnp.array([0.1, 0.4]),)
    searched = _gradient_check(wrapped, args, monkeypatch)
    confirmed = _gradient_check(wrapped, args, monkeypatch, wanted="digamma")
    assert _entry(searched)[0] == _entry(confirmed)[0] == "digamma"
    assert confirmed["locate_tests"] == 2 and confirmed["inputs"] == searched["inputs"]


@needs_enzyme
def test_a_function_of_one_operation_is_named_without_a_test(monkeypatch):
    import jax

    def alone(x):
        return jax.lax.digamma(x)

    for wanted in (None, "digamma", "sin"):
        check = _gradient_check(alone, (1.5,), monkeypatch, wanted=wanted)
        assert _entry(check) == ("digamma", 0)


def test_result_watch_confirms_the_wanted_miscompiled_operation(monkeypatch):
    import jax
    import jax.numpy as jnp

    from reducer.cross_checks.locate import WANTED_ENV
    from reducer.cross_checks.results import Call, _compare

    def norms(x):
        return jax.vmap(lambda row: jnp.sum((jnp.eye(3) @ row) ** 2))(x)

    i = jnp.arange(32_769, dtype=jnp.float32)
    points = jnp.stack((i, jnp.zeros_like(i), jnp.zeros_like(i)), axis=1)
    call = Call("norms", norms, (points,), {}, jax.jit(norms)(points))
    monkeypatch.delenv(WANTED_ENV, raising=False)
    searched = _compare(call)
    monkeypatch.setenv(WANTED_ENV, "reduce_sum")
    confirmed = _compare(call)
    monkeypatch.setenv(WANTED_ENV, "dot_general")  # there, and compiled right: the search decides
    other = _compare(call)
    assert searched["operation"] == confirmed["operation"] == other["operation"] == "reduce_sum"
    # reduce_sum returns the function's result, known to differ: only the step before is tested
    assert confirmed["locate_tests"] == 1 < searched["locate_tests"]
    assert other["locate_tests"] == searched["locate_tests"]  # the prefix the confirmation tested is not tested again


@pytest.mark.slow
@needs_enzyme
def test_the_job_hands_the_wanted_operation_to_its_candidates(tmp_path):
    from reducer.reduce import Options, Reduction

    job = Reduction(PROGRAMS / "digamma_mismatch.py", tmp_path / "o", Options(runs=1, jobs=1, max_time=300))
    try:
        est = job.establish()
        assert est.signature.get("op") == "digamma"
        assert job.sandbox.extra_env["REDUCER_WANTED_OPERATION"] == "digamma"
        run = job.execute(job.source, job.limits)
    finally:
        job.close()
    (check,) = run.harness["checks"]
    assert _entry(check) == ("digamma", 2)
    assert job.judge(est.oracle, est.signature, run)[0]
