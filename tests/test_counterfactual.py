"""The bug, fixed: the reproducer of a numeric failure, or of a failure the program's own check decides,
must fail on that check, not unconditionally (reducer/counterfactual.py). Real runs of real programs:
Enzyme-JAX's wrong digamma derivative and a real `jit` miscompile."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from oracles.outcome import Signature
from reducer import counterfactual
from reducer.reduce import Options, Reduction

PROGRAMS = Path(__file__).parent / "programs"
enzyme = pytest.importorskip("enzyme_ad.jax")

UNCONDITIONAL = ("import jax\nimport jax.numpy as jnp\nfrom enzyme_ad.jax import enzyme_jax_ir\n"
                 "f = jax.scipy.special.digamma\n"
                 "jax.jit(jax.grad(enzyme_jax_ir()(f)))(1.5)\njax.grad(f)(1.5)\n"
                 "raise SystemExit('gradient mismatch between Enzyme-JAX and JAX')\n")


def test_the_prologue_goes_after_the_docstring_and_future_imports():
    source = '"""doc"""\nfrom __future__ import annotations\nimport jax\nprint(1)\n'
    lines = counterfactual.fixed(source, "jit").splitlines()
    assert lines[:2] == ['"""doc"""', "from __future__ import annotations"]
    assert lines[2:4] == counterfactual.PROLOGUES["jit"].splitlines() and lines[4:] == ["import jax", "print(1)"]
    compile(counterfactual.fixed(source, "enzyme"), "x.py", "exec")


def test_only_programs_that_stop_by_themselves_are_checked():
    numeric = Signature("activity-mismatch", (("kind", "numeric"), ("op", "digamma"), ("program-exit", "x")))
    assert counterfactual.mode(numeric) == "enzyme"
    assert counterfactual.mode(Signature("wrong-result", (("op", "reduce_sum"), ("program-exit", "y")))) == "jit"
    assert counterfactual.mode(Signature("activity-mismatch", (("kind", "numeric"), ("op", "digamma")))) is None
    assert counterfactual.mode(Signature("crash", (("how", "signal"),))) is None
    on_gpu = (("reference", "cpu"), ("op", "dot_general"), ("program-exit", "y"))
    assert counterfactual.mode(Signature("wrong-result", on_gpu)) == "cpu"
    assert counterfactual.mode(Signature("wrong-result", (("reference", "op-by-op,cpu"),) + on_gpu[1:])) == "jit"


@pytest.mark.slow
def test_a_candidate_that_stops_unconditionally_is_not_interesting(tmp_path):
    job = Reduction(PROGRAMS / "digamma_mismatch.py", tmp_path / "out", Options(oracle="auto", jobs=1))
    try:
        est = job.establish()
        assert counterfactual.mode(est.signature) == "enzyme"
        test = job.make_test(est, job.source)
        assert "must also run through" in "\n".join(job.log_lines)
        assert test(job.source, threading.Event())  # compares, and stops only on the disagreement
        assert job.judge(est.oracle, est.signature, job.execute(UNCONDITIONAL, job.limits))[0]  # the harness alone
        assert not test(UNCONDITIONAL, threading.Event())  # … but it stops with the bug fixed too
    finally:
        job.close()


@pytest.mark.slow
def test_a_jit_miscompare_runs_through_op_by_op(tmp_path):
    job = Reduction(PROGRAMS / "jit_miscompare.py", tmp_path / "out", Options(oracle="wrong-result", jobs=1))
    try:
        assert counterfactual.runs_clean(job, job.source, "jit")
        assert not counterfactual.runs_clean(job, job.source + "raise SystemExit('jit and eager results differ')\n",
                                             "jit")
        assert counterfactual.runs_clean(job, job.source, "cpu")  # op by op on the CPU, as on a GPU
    finally:
        job.close()


@pytest.mark.slow
def test_a_difference_the_harness_finds_that_is_not_why_the_program_stops_is_not_its_failure(tmp_path):
    """The real miscompile computed but never compared: the program stops on a `log(0)` of its own,
    op by op too. The harness still finds `jit` and op by op apart, but that is not why it stops."""
    miscompile = (PROGRAMS / "jit_miscompare.py").read_text().split("eager = ")[0]
    beside = miscompile + ("compiled = jax.jit(squared_norms)(points)\n"
                           "assert jnp.isfinite(jnp.log(compiled[0])), 'the loss is not finite'\n")
    (tmp_path / "beside.py").write_text(beside)
    for program, family in ((tmp_path / "beside.py", "nonfinite"), (PROGRAMS / "jit_miscompare.py", "wrong-result")):
        job = Reduction(program, tmp_path / f"out-{family}", Options(jobs=1, runs=1))
        try:
            assert job.establish().signature.family == family
            told = "is not why; judged by how the program stops" in "\n".join(job.log_lines)
            assert told == (family == "nonfinite")
        finally:
            job.close()


def test_a_program_s_own_check_is_held_to_the_reference_it_compares_with():
    own = Signature("own-check", (("type", "AssertionError"), ("check", "assert"), ("reads", "close")))
    program = "import jax\nfrom enzyme_ad.jax import enzyme_jax_ir\nf = jax.jit(g)\n"
    assert counterfactual.modes(own, program) == ["enzyme", "jit"]  # each tried on the original, in turn
    assert counterfactual.modes(own, "import numpy\n") == ["numpy"]  # JAX's functions computed by NumPy's
    assert counterfactual.modes(own, "import jax\n") == []
    nan = Signature("own-check", (("type", "AssertionError"), ("reads", "nonfinite")))
    assert counterfactual.modes(nan, program) == []  # no reference makes a NaN finite
    assert counterfactual.modes(nan, program + "jax.config.update('jax_debug_nans', True)\n") == ["nan-check"]
    assert counterfactual.modes(nan, MISSED) == ["nan-check"]
    located = Signature("nonfinite", (("check", "assert"), ("op", "log")))
    assert counterfactual.modes(located, MISSED) == []  # its fix is its origin's
    regex = Signature("regex", (("pattern", "differ"),))
    assert counterfactual.modes(regex, "y = jax.jit(f)(x)\n") == ["jit"]


@pytest.mark.slow
def test_a_regex_oracle_on_a_jit_comparison_is_held_to_op_by_op(tmp_path):
    job = Reduction(PROGRAMS / "jit_miscompare.py", tmp_path / "out",
                    Options(oracle="regex:jit and eager results differ", jobs=1))
    try:
        est = job.establish()
        test = job.make_test(est, job.source)
        assert "run through with `jit` replaced by op-by-op evaluation" in "\n".join(job.log_lines)
        assert test(job.source, threading.Event())
        hard_coded = "raise AssertionError('jit and eager results differ')\n"
        assert job.judge(est.oracle, est.signature, job.execute(hard_coded, job.limits))[0]  # the pattern alone
        assert not test(hard_coded, threading.Event())  # … but it fails with `jit` off too
    finally:
        job.close()


OPTAX_HEAD = "import jax\nimport optax\nf = lambda p: p * p\n"
#: the minimum of a loss that rises under a rate written negative (`scale_by_learning_rate` negates it itself)
CLIMBS = OPTAX_HEAD + ("opt = optax.scale_by_learning_rate(-0.1)\nu, _ = opt.update(jax.grad(f)(1.0), opt.init(1.0))\n"
                       "assert f(1.0 + u) < f(1.0), 'training made things worse'\n")
#: candidates the search met or could meet in its place: each still fails its check with the rates positive
LOSS_LOOPHOLES = {
    "constant-losses": OPTAX_HEAD + "losses = [2.0, 3.0]\nassert losses[-1] < losses[0], 'training made things worse'\n",
    "loss-not-reading-the-optimizer": OPTAX_HEAD + ("opt = optax.sgd(0.1)\nu, _ = opt.update(jax.grad(f)(1.0), opt.init(1.0))\n"
                                                    "assert f(1.0 + 1.0) < f(1.0), 'training made things worse'\n"),
    "ascent-by-hand": OPTAX_HEAD + "assert f(1.0 + 0.1 * jax.grad(f)(1.0)) < f(1.0), 'training made things worse'\n",
}


def test_a_loss_that_rises_is_held_to_optax_s_learning_rate_sign():
    sig = Signature("own-check", (("type", "AssertionError"), ("check", "assert"), ("reads", "order")))
    assert counterfactual.modes(sig, CLIMBS) == ["descend"]
    assert counterfactual.modes(sig, LOSS_LOOPHOLES["ascent-by-hand"].replace("optax", "optix")) == []


@pytest.mark.slow
@pytest.mark.parametrize("schedule", [False, True])
def test_the_rate_taken_positive_makes_a_climbing_loss_fall(tmp_path, schedule):
    from conftest import run_text

    program = CLIMBS.replace("(-0.1)", "(lambda step: -optax.cosine_decay_schedule(0.1, 10)(step))") if schedule else CLIMBS
    assert run_text(program, tmp_path).returncode == 1
    assert run_text(counterfactual.fixed(program, "descend"), tmp_path).returncode == 0
    adam = program.replace("optax.scale_by_learning_rate(", "optax.adam(")  # the aliases go through it too
    assert run_text(counterfactual.fixed(adam, "descend"), tmp_path).returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LOSS_LOOPHOLES))
def test_a_loss_loophole_fails_as_the_original_but_not_by_the_rate_sign(tmp_path, name):
    """Each fails its check as the original does (without the fix it would pass for the failure), and
    still fails with the rates positive: the counterfactual rejects it."""
    from conftest import run_text
    from oracles.own_check import OwnCheck

    oracle = OwnCheck()
    original = oracle.classify(run_text(CLIMBS, tmp_path))
    seen = oracle.classify(run_text(LOSS_LOOPHOLES[name], tmp_path))
    assert original is not None and seen is not None and oracle.same(original, seen)
    assert run_text(counterfactual.fixed(LOSS_LOOPHOLES[name], "descend"), tmp_path).returncode == 1


def test_going_on_from_a_written_back_script_its_candidates_timeout_follows_that_script(tmp_path):
    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(7)\nassert 1 + 1 == 3, 'sums differ'\n")
    job = Reduction(slow, tmp_path / "out", Options(oracle="auto", jobs=1, runs=1))
    try:
        est = job.establish()
        before = job.limits.timeout
        job.make_test(est, "assert 1 + 1 == 3, 'sums differ'\n")  # a level's result, fast to run
        assert before >= 28 and job.timeout.value < before and job.latest_seconds < 7
    finally:
        job.close()


#: JAX 0.10.2's NaN check lost after a `with jax.debug_nans(False):` block (the corpus's case): the
#: program counts on the check to stop a NaN, and it does not
NAN_HEAD = "import jax\nimport jax.numpy as jnp\nimport numpy as np\n"
MISSED = NAN_HEAD + ("jax.config.update('jax_debug_nans', True)\nkey = jax.random.key(0)\njnp.log(jnp.ones(1))\n"
                     "with jax.debug_nans(False):\n    pass\n"
                     "try:\n    value = jnp.log(-jnp.ones(1))\nexcept FloatingPointError:\n    pass\nelse:\n"
                     "    raise AssertionError(f'jax_debug_nans is on, but a NaN got through: {value}')\n")
#: candidates the search met (the first) or could meet in its place: each fails the check as the original
#: does, and still fails with JAX's check made at every operation
NAN_LOOPHOLES = {
    "no-nan-made": MISSED.replace("jnp.log(-jnp.ones(1))", "jnp.ones(0)"),
    "nan-made-with-the-check-off": MISSED.replace("with jax.debug_nans(False):\n    pass\ntry:\n    value",
                                                  "try:\n    with jax.debug_nans(False):\n        value"),
    "nan-made-by-numpy": MISSED.replace("jnp.log(-jnp.ones(1))", "np.log(-np.ones(1))"),
    "check-never-on": MISSED.replace("jax.config.update('jax_debug_nans', True)\n", ""),
}


def test_a_nan_jax_was_asked_to_stop_runs_through_with_its_check_made_at_every_operation(tmp_path):
    from conftest import run_text

    assert "NaN got through: [nan]" in run_text(MISSED, tmp_path).stderr  # the JAX bug
    fixed = run_text(counterfactual.fixed(MISSED, "nan-check"), tmp_path)
    assert fixed.returncode == 0, fixed.stderr  # a PRNG key's values are not checked
    assert counterfactual.OWNERS["nan-check"] == "jax"
    assert run_text(counterfactual.fixed(MISSED, "values"), tmp_path).returncode == 1  # not a value `jit` made
    masked = NAN_HEAD + ("jax.config.update('jax_debug_nans', True)\n"
                         "f = jax.jit(lambda x: jnp.where(x > 0, jnp.log(x), 0.0))\n"
                         "try:\n    f(-1.0)\nexcept FloatingPointError:\n    pass\nelse:\n"
                         "    raise AssertionError('the NaN a where masks was not caught')\n")
    # a NaN a compiled `where` masks out of the results: JAX promises no check of it, nor does the fix
    assert run_text(counterfactual.fixed(masked, "nan-check"), tmp_path).returncode == 1


@pytest.mark.slow
def test_a_jit_miscompile_in_a_program_that_turns_the_checks_on_is_not_the_check_s(tmp_path):
    """JAX's check kept on every compiled call leaves the miscompile, and the values alone (op by op,
    the checks taken away) run through: `missed_nan_check` says no, and the program is held to `jit`."""
    from conftest import run_text

    miscompile = (PROGRAMS / "jit_miscompare.py").read_text()
    program = miscompile.replace("import jax\n", "import jax\njax.config.update('jax_debug_nans', True)\n", 1)
    assert program != miscompile and run_text(program, tmp_path).returncode != 0
    assert run_text(counterfactual.fixed(program, "nan-check"), tmp_path).returncode == 1
    assert run_text(counterfactual.fixed(program, "values"), tmp_path).returncode == 0
    script = tmp_path / "checks_on.py"
    script.write_text(program)
    job = Reduction(script, tmp_path / "out", Options(oracle="regex:jit and eager results differ", jobs=1))
    try:
        est = job.establish()
        assert counterfactual.modes(est.signature, program) == ["nan-check", "jit"]  # JAX's check is tried first
        assert est.fix is None and counterfactual.fix_to_survive(job, program, est.signature) == "jit"
    finally:
        job.close()


@pytest.mark.slow
def test_the_check_s_miss_found_at_the_start_is_not_asked_again_of_the_original(tmp_path):
    """Established once (before any origin is sought), the fix travels with the failure: the test for the
    original runs nothing more; a program other than the original is asked whether it survives it."""
    script = tmp_path / "missed.py"
    script.write_text(MISSED)
    job = Reduction(script, tmp_path / "out", Options(oracle="auto", jobs=1, runs=1))
    try:
        est = job.establish()
        assert est.fix == "nan-check" and job.fault_finder is None
        ran = []
        execute = job.execute
        job.execute = lambda source, *args, **kwargs: ran.append(source) or execute(source, *args, **kwargs)
        job.make_test(est, job.source)
        assert ran == [] and job.fix == "nan-check"
        assert counterfactual.fix_to_survive(job, NAN_LOOPHOLES["no-nan-made"], est.signature, est.fix) is None
        assert len(ran) == 1  # the loophole with the check kept, asked once
    finally:
        job.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NAN_LOOPHOLES))
def test_a_nan_check_loophole_fails_as_the_original_but_not_with_the_check_made(tmp_path, name):
    from conftest import run_text
    from oracles.own_check import OwnCheck

    oracle = OwnCheck()
    original = oracle.classify(run_text(MISSED, tmp_path))
    seen = oracle.classify(run_text(NAN_LOOPHOLES[name], tmp_path))
    assert original is not None and seen is not None and oracle.same(original, seen), seen
    assert run_text(counterfactual.fixed(NAN_LOOPHOLES[name], "nan-check"), tmp_path).returncode == 1
