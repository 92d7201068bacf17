"""The program's own check family (`oracles.own_check`), on real runs of the programs in
tests/programs/own_checks/: each fails by a check of its own, one by a plain error of its code."""
import subprocess
import sys
import time

import pytest

import oracles
from conftest import PROGRAMS
from oracles.outcome import RunResult
from oracles.own_check import OwnCheck, masked, reads

OWN = PROGRAMS / "own_checks"


def run(name: str) -> RunResult:
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(OWN / f"{name}.py")], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    return RunResult(done.returncode, done.stdout, done.stderr, time.monotonic() - started)


@pytest.mark.parametrize("name, fields", [
    ("nan_gradient_assert", {"type": "AssertionError", "check": "assert", "reads": "nonfinite",
                             "message": "gradient is <array>"}),
    ("allclose_reference", {"type": "AssertionError", "check": "assert_allclose", "reads": "close",
                            "message": "Not equal to tolerance rtol=N, atol=N"}),
    ("diverged_raise", {"type": "Diverged", "check": "raise", "message": "loss went up at step N: N > N"}),
    ("exit_message", {"type": "SystemExit", "check": "exit", "status": "1",
                      "message": "training diverged: final loss N"}),
    ("loss_falls_assert", {"type": "AssertionError", "check": "assert", "reads": "order", "message": ""}),
    ("pytest_raises_missed", {"type": "Failed", "check": "pytest.raises", "reads": "value",
                              "message": "DID NOT RAISE FloatingPointError"}),
])
def test_auto_recognises_the_programs_own_check(name, fields):
    """`auto` picks the family for each kind of check, and the signature says what the check reads."""
    found = oracles.detect(run(name))
    assert found is not None, name
    oracle, sig = found
    assert sig.family == "own-check" and isinstance(oracle, OwnCheck)
    for key, value in fields.items():
        assert sig.get(key) == value, (key, sig)
    assert "own check" in sig.title or "exits with status" in sig.title


def test_an_error_of_the_programs_code_is_no_check():
    """A KeyError from the program's own subscript is not a check it made: still no recognised failure."""
    result = run("code_error")
    assert result.returncode == 1 and "KeyError" in result.output
    assert oracles.detect(result) is None


def test_another_check_of_the_same_program_is_another_failure(tmp_path):
    """A candidate that slips to another assert (another message, another reading) is not the same."""
    oracle = OwnCheck()
    wanted = oracle.classify(run("loss_falls_assert"))
    other = oracle.classify(run("nan_gradient_assert"))
    assert wanted is not None and other is not None
    assert not oracle.same(wanted, other) and oracle.same(wanted, oracle.classify(run("loss_falls_assert")))


def test_exceptions_raised_inside_a_library_are_not_the_programs():
    """A traceback that ends inside JAX is the jax-error family's, never this one's."""
    text = ('Traceback (most recent call last):\n  File "/home/u/train.py", line 3, in <module>\n    raise_it()\n'
            '  File "/usr/lib/python3.11/site-packages/jax/_src/core.py", line 9, in raise_it\n'
            '    raise TypeError("bad")\nTypeError: bad\n')
    assert OwnCheck().classify(RunResult(1, "", text, 1.0)) is None


def test_argparse_usage_errors_are_left_to_the_needs_input_message():
    text = "usage: train.py [-h] --lr LR\ntrain.py: error: the following arguments are required: --lr\n"
    assert OwnCheck().classify(RunResult(2, "", text, 1.0)) is None


def test_messages_are_masked_and_checks_read():
    assert masked("step 3: grad [[nan 1.]") == "step N: grad <array>"
    assert masked("got Array([1., 2.], dtype=float32)") == "got <array>"
    assert reads("assert jnp.isfinite(g).all(), g", "") == "nonfinite"
    assert reads("np.testing.assert_allclose(a, b)", "") == "close"
    assert reads("assert loss < prev, f'{loss} vs {prev}'", "") == "order"
    assert reads("assert ok", "") == "value"


def test_a_nonfinite_title_without_a_transformation_says_none():
    from oracles.nonfinite import signature as nonfinite

    at = (("value", "nan"), ("in", ""), ("op", "exp"), ("fix", "float64"), ("from", "exp"))
    assert nonfinite("AssertionError", "assert_allclose", at, "").title == \
        "A NaN from `exp` fails the program's `assert_allclose`"
    grad = (("value", "nan"), ("in", "grad"), ("op", "sqrt"), ("from", "sqrt"))
    assert nonfinite("AssertionError", "assert", grad, "").title == "A NaN from `sqrt` under `grad` fails the program's `assert`"
