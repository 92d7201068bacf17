"""The source level's starts (`reducer.levels.source.starts`): the reference-alone start, which
finds the step where a JAX computation parts from the program's NumPy reference, on real runs of
programs that compare the two; and how the level picks the first proposal that shows the failure."""
import threading
from pathlib import Path

import pytest

from conftest import PROGRAMS, run_text
from oracles.outcome import Signature
from oracles.own_check import OwnCheck
from reducer.levels.source import check_values, starts
from reducer.levels.source.starts.reference_alone import ReferenceAlone, compose, facts

OWN = PROGRAMS / "own_checks"
FLAX_BLOCK = Path(__file__).resolve().parents[1] / "benchmarks" / "cases" / "flax_linen_numpy_reference_test.py"
#: what the probe reported on a run of FLAX_BLOCK: `nn.gelu` (line 20) against the reference's exact
#: erf (line 31), at the two elements where they differ most
GELU = {"check": "assert_allclose", "check_line": 57, "step_line": 20, "function": "gelu",
        "params": ["x", "approximate"], "args": ["h", None], "reference_line": 31,
        "forms": [{"h": -2.565721273422241}, {"h": 2.7003591060638428}], "dtypes": {"h": "float32"}}


def test_the_flax_blocks_gelu_alone_against_the_references_erf():
    """From the probe's facts, the proposal is the program's check on `nn.gelu` and the reference's
    statement, fed the value the GELU's input had, with the program's imports."""
    first, second = compose(FLAX_BLOCK.read_text(), GELU)
    assert first.splitlines()[-2:] == [
        "h = -2.565721273422241",
        "np.testing.assert_allclose(nn.gelu(h), 0.5 * h * (1.0 + erf(h / np.sqrt(2.0))), rtol=1e-05, atol=1e-06)"]
    assert "import flax.linen as nn" in first and "from scipy.special import erf" in first
    assert "h = 2.7003591060638428" in second


def test_later_candidates_keep_the_references_step_and_the_call():
    """The reference's statement may change its values and inputs, not its computation; the other side
    must still call the step."""
    start = ReferenceAlone()
    start.found = dict(GELU)
    holds = start.must_keep("h = 1.0\nnp.testing.assert_allclose(nn.gelu(h), 0.5 * h * (1.0 + erf(h / np.sqrt(2.0))))\n")
    assert holds("numpy.testing.assert_allclose(nn.gelu(-1.0), 0.5 * -1.0 * (1.0 + erf(-1.0 / numpy.sqrt(2.0))))\n")
    assert not holds("np.testing.assert_allclose(nn.gelu(h), 0.5 * h * erf(h / np.sqrt(2.0)))\n")  # a term gone
    assert not holds("np.testing.assert_allclose(h, 0.5 * h * (1.0 + erf(h / np.sqrt(2.0))))\n")  # no gelu
    resize = ReferenceAlone()
    resize.found = {"check": "assert_allclose", "function": "resize", "args": ["h"], "forms": [{"h": [[[0.0], [1.0]]]}]}
    holds = resize.must_keep("np.testing.assert_allclose(jax.image.resize(h, (1, 2, 1)), 0.5 * (h[:, 0::2] + h[:, 1::2]))\n")
    assert holds("np.testing.assert_allclose(jax.image.resize(h, (1, 1, 1)), 0.5 * (h[:, 0::2] + h[:, 1::2]))\n")
    assert not holds("np.testing.assert_allclose(jax.image.resize(h, (1, 1, 1)), h[:, 0::2])\n")  # one frame
    options = ReferenceAlone()
    options.found = {"check": "assert_allclose", "function": "standardize", "args": ["h"],
                     "forms": [{"h": [[1.0, 2.0]], "m": [[1.5]], "s": [[0.5]]}]}
    written = "h = np.array([[1.0, 2.0]])\nm = np.array([[1.5]])\ns = np.array([[0.5]])\n"
    kept = options.must_keep(written + "np.testing.assert_allclose(jax.nn.standardize(h, axis=-1, epsilon=1e-3), "
                                   "(h - m) / s)\n")
    assert kept(written + "numpy.testing.assert_allclose(jax.nn.standardize(h, -1, 0.001), (h - m) / s)\n")
    assert not kept(written + "numpy.testing.assert_allclose(jax.nn.standardize(h), (h - m) / s)\n")  # default epsilon
    changed = written.replace("2.0", "0.0")  # `m` and `s` are the mean and deviation of the input as it was
    assert not kept(changed + "numpy.testing.assert_allclose(jax.nn.standardize(h, -1, 0.001), (h - m) / s)\n")
    assert not holds("np.testing.assert_allclose(jax.image.resize(h, (1, 1, 1)), 0.5 * (h[:, 0::2] + h[:, 0::2]))\n")
    written = resize.must_keep("h = np.array([[[0.5], [2.5], [1.0], [3.0]]])\n"
                           "np.testing.assert_allclose(jax.image.resize(h, (1, 2, 1)), 0.5 * (h[:, 0::2] + h[:, 1::2]))\n")
    assert written("h = numpy.array([[[0.0], [0.0], [1.0], [0.0]]])\n"
                   "numpy.testing.assert_allclose(jax.image.resize(h, (1, 2, 1)), 0.5 * (h[:, 0::2] + h[:, 1::2]))\n")
    assert not written("h = numpy.array([[[0.0], [0.0], [1.0]]])\n"  # one frame fewer: fails without the bug too
                       "numpy.testing.assert_allclose(jax.image.resize(h, (1, 2, 1)), 0.5 * (h[:, 0::2] + h[:, 1::2]))\n")


def test_no_proposal_when_a_part_cannot_stand_alone():
    """A step called through a name the program binds locally, or a reference statement that reads a
    name with no value, gives no proposal."""
    source = FLAX_BLOCK.read_text()
    assert list(compose(source.replace("nn.gelu(nn.Dense", "act(nn.Dense"), dict(GELU, function="act"))) == []
    assert list(compose(source, dict(GELU, reference_line=30))) == []  # reads `p`, a dict of arrays
    assert list(compose(source, dict(GELU, step_line=19))) == []  # no `gelu` called there
    assert facts("REDUCER-REFERENCE {not json\n") is None and facts("no report\n") is None


def test_one_row_of_a_batch_and_the_sizes_the_call_reads():
    """A resize over a batch of sequences: the arrays cut to one batch row and one channel (the axes the
    resize keeps), with the plain values the call's line reads (`b, t` of `x.shape`): the batch's
    length now 1, the time axis's read from the array, so that shortening it keeps the call consistent."""
    source = (FLAX_BLOCK.parent / "nnx_resize_reference_test.py").read_text()
    found = {"check": "assert_allclose", "check_line": 54, "step_line": 21, "function": "resize",
             "params": ["image", "shape", "method", "antialias", "precision"], "args": ["h", None, None, None, None],
             "reference_line": 29, "forms": [{"h": [[[0.0], [1.0], [2.0]]]}], "kinds": ["cut"], "sizes": [4],
             "scope": {"b": 4, "t": 3, "_": 8}, "dtypes": {"h": "float32"}}
    proposal = next(compose(source, found))
    assert proposal.splitlines()[-4:] == [
        "h = np.array([[[0.0], [1.0], [2.0]]], np.float32)", "b = 1", "t = h.shape[1]",
        "np.testing.assert_allclose(jax.image.resize(h, (b, t // 2, h.shape[-1]), method='linear'), "
        "0.5 * (h[:, 0::2] + h[:, 1::2]), rtol=0.0001, atol=1e-05)"]


@pytest.mark.slow
def test_a_layer_norm_against_its_reference_starts_from_the_variance(tmp_path):
    """On a real run: `jnp.var` (population variance) against the reference's `x.var(ddof=1)`, the
    whole 4x8 input written in (the step is not elementwise), and the proposal fails the same way."""
    source = (OWN / "layer_norm_reference.py").read_text()
    oracle = OwnCheck()
    wanted = oracle.classify(run_text(source, tmp_path))
    proposal = next(ReferenceAlone().proposals(source, lambda text: run_text(text, tmp_path)))
    assert proposal.splitlines()[-1] == ("np.testing.assert_allclose(jnp.var(x, axis=-1, keepdims=True), "
                                         "x.var(-1, ddof=1, keepdims=True), rtol=0.0001)")
    assert proposal.count("\n") == 5 and "x = np.array([[" in proposal
    seen = run_text(proposal, tmp_path)
    assert oracle.same(wanted, oracle.classify(seen))
    guard = check_values.guard_for(wanted, source, run_text(source, tmp_path), "candidate.py", lambda line: None)
    assert guard(proposal, seen.output)  # two computed sides, a mismatch of the program's order


@pytest.mark.slow
def test_no_proposal_where_no_jax_step_parts_from_the_reference(tmp_path):
    """A float32 NumPy softplus against float64 `logaddexp`: no JAX call, nothing to start from."""
    source = (OWN / "allclose_reference.py").read_text()
    assert list(ReferenceAlone().proposals(source, lambda text: run_text(text, tmp_path))) == []


class _Numbers:
    """A start whose proposals are numbered programs, for how the level picks among them."""

    name = "numbers"

    def applies(self, signature):
        return signature.family == "own-check"

    def proposals(self, program, run):
        return (f"x = {k}\n" for k in range(100))


def test_the_level_starts_from_the_first_proposal_that_shows_the_failure(monkeypatch):
    monkeypatch.setattr(starts, "STARTS", [_Numbers])
    tried, logged, stop = [], [], threading.Event()

    def test(candidate, cancel):
        tried.append(candidate)
        return candidate == "x = 2\n"

    sig = Signature("own-check", (("reads", "close"),))
    found = starts.starting_point("x = 10\n", sig, None, test, logged.append, stop)
    assert found[0] == "x = 2\n" and found[1].name == "numbers"
    assert tried == ["x = 0\n", "x = 1\n", "x = 2\n"]
    tried.clear()
    assert starts.starting_point("x = 100\n", sig, None, lambda c, cancel: tried.append(c), logged.append, stop) is None
    assert len(tried) == starts.MAX_PROPOSALS and "numbers: no smaller program" in logged[-1]
    assert starts.starting_point("", Signature("crash", ()), None, test, logged.append, stop) is None
    tried.clear()  # a proposal no smaller than the program is not tried
    assert starts.starting_point("x = 2\n", sig, None, test, logged.append, stop) is None and "x = 2\n" not in tried
