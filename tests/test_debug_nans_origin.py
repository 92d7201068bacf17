"""JAX's own NaN check, switched on by the program (`jax.debug_nans`), is a value failure held to its
origin (`oracles.jax_error`, `reducer.faults.origin`): its message says where a NaN spread, not why,
and a `log` of a 0 written in raises the same message. Real runs of real programs."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from oracles import kinds
from oracles.jax_error import JaxError
from oracles.outcome import RunResult
from reducer.faults import nonfinite
from reducer.faults.attach import Attached, carrying
from reducer.faults.origin import ValueOrigin
from reducer.faults import Fault
from conftest import run_text

HEAD = "import jax\nimport jax.numpy as jnp\n"
#: an ordinal model's `-log P(5 stars)`, whose sigmoid rounds to 1 in float32 at a sarcastic review's logit
ORIGINAL = HEAD + ("nll = lambda eta: -jnp.log(1.0 - jax.nn.sigmoid(3.0 - eta))\n"
                   "with jax.debug_nans(True):\n    jax.grad(nll)(jnp.array(-20.0))\n")
RAISED = ('Traceback (most recent call last):\n  File "/tmp/x/candidate.py", line 4, in <module>\n'
          '    jax.grad(nll)(jnp.array(-20.0))\n'
          '  File "/site-packages/jax/_src/pjit.py", line 173, in _run_python_pjit\n'
          '    raise FloatingPointError(\nFloatingPointError: invalid value (nan) encountered in mul\n')


def test_jax_s_nan_check_is_a_value_failure_whose_signature_names_its_origin_once_located():
    run = RunResult(1, "", RAISED, 1.0)
    plain = JaxError().classify(run)
    assert kinds.jax_value_check(plain) and not kinds.located_value(plain)
    assert JaxError().owner(plain) == "jax"
    at = (("value", "nan"), ("in", "grad"), ("op", "log"), ("point", "pole"), ("cause", "rounding"),
          ("fix", "inner-where"), ("from", "log"))
    located = JaxError().classify(carrying(run, Fault("log", at, "")))
    assert located.fields[:4] == plain.fields and located.fields[4:] == at
    assert kinds.located_value(located) and JaxError().owner(located) == "program"
    assert located.title.startswith("A NaN from `log` under `grad` fails JAX's NaN check")
    elsewhere = JaxError().classify(carrying(run, Fault("log", dict(at, **{"from": "mean"}).items(), "")))
    assert JaxError().same(located, elsewhere)  # whichever public call reached it
    assert not JaxError().same(located, plain)


@pytest.mark.slow
def test_a_zero_written_in_is_not_the_nan_that_float32_s_rounding_made(tmp_path, monkeypatch):
    monkeypatch.setenv("JAX_TRACEBACK_FILTERING", "off")  # as candidates run: the frame that raised is JAX's
    runs = lambda text: run_text(text, Path(tempfile.mkdtemp(dir=tmp_path)))  # noqa: E731
    oracle = JaxError()
    finder = Attached(ValueOrigin(runs), oracle, nonfinite.applies)
    first = runs(ORIGINAL)
    wanted, _ = finder.establish(ORIGINAL, first, oracle.classify(first))
    assert (wanted.get("op"), wanted.get("point"), wanted.get("cause")) == ("log", "pole", "rounding"), wanted

    def judged(candidate: str) -> bool:
        return oracle.judge(wanted, finder.attach(candidate, runs(candidate)))[0]

    written_in = HEAD + "with jax.debug_nans(True):\n    jax.grad(lambda x: jnp.log(0.0 * x) * 0.0)(1.0)\n"
    assert oracle.classify(runs(written_in)).get("message") == wanted.get("message")  # the same words
    assert not judged(written_in)
    assert judged(HEAD + "with jax.debug_nans(True):\n    jax.grad(lambda z: jnp.log(1.0 - jax.nn.sigmoid(z)))(23.0)\n")
