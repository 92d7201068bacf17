"""A check of the program's that a library raised for it (`oracles.library_check`): Equinox's
`error_if` and JAX's `checkify` are the program's own checks, whichever way the program calls them,
not a bug of Equinox or JAX, and not XLA's error status. Real runs of real programs."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from oracles import detect
from oracles.crash import Crash
from oracles.jax_error import JaxError
from oracles.library_check import library_check
from oracles.own_check import OwnCheck
from conftest import run_text

#: a loss whose `log` meets a 0 that float32 made of `1 - sigmoid(z)`, checked by the library's check
LOSS = ("import jax\nimport jax.numpy as jnp\n\n"
        "def loss(w):\n    return -jnp.log(1.0 - jax.nn.sigmoid(w * 30.0))\n\n")
EQX = "import equinox as eqx\n" + LOSS + (
    "def checked(w):\n    value = loss(w)\n"
    "    return eqx.error_if(value, ~jnp.isfinite(value), 'loss is not finite')\n\n")
PROGRAMS = {
    # under `jax.jit`, Equinox's error comes back through a host callback as XLA's INTERNAL status
    "error_if under jit": EQX + "print(jax.jit(checked)(1.0))\n",
    "error_if under filter_jit": EQX + "print(eqx.filter_jit(checked)(1.0))\n",
    "error_if eager": EQX + "print(checked(1.0))\n",
    "checkify.check": "from jax.experimental import checkify\n" + LOSS + (
        "def checked(w):\n    value = loss(w)\n"
        "    checkify.check(jnp.isfinite(value), 'loss is not finite: {v}', v=value)\n    return value\n\n"
        "err, _ = jax.jit(checkify.checkify(checked))(1.0)\nerr.throw()\n"),
    "checkify's float checks": "from jax.experimental import checkify\n" + LOSS + (
        "err, _ = checkify.checkify(jax.grad(loss), errors=checkify.float_checks)(1.0)\nerr.throw()\n"),
}
WANTED = {
    "error_if under jit": ("EquinoxRuntimeError", "error_if", "loss is not finite"),
    "error_if under filter_jit": ("EquinoxRuntimeError", "error_if", "loss is not finite"),
    "error_if eager": ("EquinoxRuntimeError", "error_if", "loss is not finite"),
    "checkify.check": ("FailedCheckError", "checkify", "loss is not finite: inf"),
    "checkify's float checks": ("DivisionByZeroError", "checkify", "division by zero"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folders = {name: tmp_path_factory.mktemp(name.replace(" ", "_").replace("'", "")) for name in PROGRAMS}
    with ThreadPoolExecutor(2) as pool:
        done = pool.map(lambda name: (name, run_text(PROGRAMS[name], folders[name])), PROGRAMS)
        return dict(done)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_check_a_library_raised_for_the_program_is_the_program_s_own_check(runs, name):
    run = runs[name]
    assert run.returncode == 1, run.output
    made = library_check(run.output)
    assert made is not None and (made.kind, made.check, made.message) == WANTED[name], made
    _, sig = detect(run)
    assert sig.family == "own-check" and sig.get("reads") == "nonfinite", sig
    assert (sig.get("type"), sig.get("check"), sig.get("message")) == WANTED[name]
    assert OwnCheck().owner(sig) == "program"
    assert Crash().classify(run) is None and JaxError().classify(run) is None  # nor XLA's, nor a library's


def test_the_line_of_the_check_is_read_where_the_output_shows_it(runs):
    assert "eqx.error_if(value" in library_check(runs["error_if under filter_jit"].output).line
    assert "checkify.check(" in library_check(runs["checkify.check"].output).line
    assert library_check(runs["error_if under jit"].output).line == ""  # the callback's traceback shows none


def test_an_error_the_program_raises_in_its_own_callback_is_no_library_s_check(tmp_path):
    """A host callback of the program's that raises comes back as XLA's INTERNAL status too; it is not
    a check a library made, and the crash family keeps its reading of it."""
    program = ("import jax\nimport jax.numpy as jnp\nimport numpy as np\n\n"
               "def host(x):\n    raise ValueError('the host side refused')\n\n"
               "f = jax.jit(lambda x: jax.pure_callback(host, jax.ShapeDtypeStruct((), jnp.float32), x))\n"
               "print(f(1.0))\n")
    run = run_text(program, tmp_path)
    assert run.returncode == 1 and "CpuCallback error" in run.output, run.output
    assert library_check(run.output) is None
    assert OwnCheck().classify(run) is None or OwnCheck().classify(run).get("check") not in ("error_if", "checkify")


@pytest.mark.slow
def test_a_value_an_error_if_stops_under_jit_is_held_to_its_origin_as_the_original_was(tmp_path):
    """Equinox's `error_if` stops a compiled call before JAX's checks see its result: its value is met
    op by op alone, when the origin is established and when a candidate is held to it (the original
    itself judged again is the same failure), and a `log` of a 0 written in is not."""
    import tempfile
    from pathlib import Path

    from reducer.faults import nonfinite
    from reducer.faults.attach import Attached
    from reducer.faults.origin import ValueOrigin

    runs = lambda text: run_text(text, Path(tempfile.mkdtemp(dir=tmp_path)))  # noqa: E731
    oracle = OwnCheck()
    program = PROGRAMS["error_if under filter_jit"]
    localiser = ValueOrigin(runs)
    finder = Attached(localiser, oracle, nonfinite.applies)
    first = runs(program)
    wanted, _ = finder.establish(program, first, oracle.classify(first))
    assert localiser.eager_checks is True
    assert (wanted.family, wanted.get("check"), wanted.get("op"), wanted.get("point")) == \
        ("nonfinite", "error_if", "log", "pole"), wanted

    def judged(candidate: str) -> bool:
        return oracle.judge(wanted, finder.attach(candidate, runs(candidate)))[0]

    assert judged(program)
    written_in = ("import equinox as eqx\nimport jax.numpy as jnp\n"
                  "value = jnp.log(jnp.float32(1.0) - jnp.float32(1.0))\n"
                  "eqx.filter_jit(lambda v: eqx.error_if(v, ~jnp.isfinite(v), 'loss is not finite'))(value)\n")
    assert oracle.classify(runs(written_in)).get("message") == "loss is not finite"  # the same words
    assert not judged(written_in)


def test_the_report_says_whose_check_a_library_raised(runs):
    """The "Where to file" section: the program's own code, and why though a library raised it."""
    from reducer import bug_report

    _, sig = detect(runs["error_if under jit"])
    summary = bug_report.ReductionSummary("train.py", 600, 30, 30.0, 100, 10, 5, "yes (3/3 runs)")
    report = bug_report.report(PROGRAMS["error_if under jit"], sig, "EquinoxRuntimeError", {}, summary)
    assert "Equinox raised it only for the program's own `eqx.error_if`" in report and "openxla" not in report
