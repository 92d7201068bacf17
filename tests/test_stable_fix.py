"""The formulas written by hand that overflow float64 too, and JAX's functions written in their place
(`reducer.faults.stable_fix`): found through imports and names bound once, left alone where they
are NumPy's or not the formula, and the rewritten program runs through where the original fails."""
from __future__ import annotations

import pytest

from reducer.faults import stable_fix
from conftest import run_text

HEAD = "import jax.numpy as jnp\n"
WRITTEN = [
    ("log(1 + exp)", "print(jnp.log(1 + jnp.exp(3.0)))\n", "softplus", "jax.nn.softplus(3.0)"),
    ("log(exp + 1.0)", "print(jnp.log(jnp.exp(3.0) + 1.0))\n", "softplus", "jax.nn.softplus(3.0)"),
    ("log(float32(1) + exp)", "print(jnp.log(jnp.float32(1.0) + jnp.exp(3.0)))\n", "softplus", "jax.nn.softplus(3.0)"),
    ("log1p(exp)", "def f(z):\n    return jnp.log1p(jnp.exp(z))\n", "softplus", "jax.nn.softplus(z)"),
    ("log(exp + exp)", "print(jnp.log(jnp.exp(a) + jnp.exp(b - 1)))\n", "logaddexp",
     "jax.numpy.logaddexp(a, (b - 1))"),
    ("log(sum(exp))", "print(jnp.log(jnp.sum(jnp.exp(x), axis=-1)))\n", "logsumexp", "jax.nn.logsumexp(x, axis=-1)"),
    ("log(exp().sum())", "print(jnp.log(jnp.exp(x).sum(0, keepdims=True)))\n", "logsumexp",
     "jax.nn.logsumexp(x, axis=0, keepdims=True)"),
    # one operation a line, as the traced level writes a script back
    ("one operation a line", "def f(a):\n    b = jnp.exp(a)\n    c = jnp.sum(b)\n    d = jnp.log(c)\n    return d\n",
     "logsumexp", "d = jax.nn.logsumexp(a)"),
    ("a method of a model", "class M:\n    def __call__(self, s):\n        e = jnp.exp(s)\n"
     "        return e / e.sum(-1, keepdims=True)\n", "softmax", "return jax.nn.softmax(s, axis=-1)"),
    ("a sum's axes kept by broadcast_in_dim", "from jax import lax\ndef f(a):\n    b = jnp.exp(a)\n"
     "    c = jnp.sum(b, axis=(1,))\n    d = lax.broadcast_in_dim(c, (2, 1), (0,))\n    return b / d\n", "softmax",
     "return jax.nn.softmax(a, axis=(1,))"),
    ("a sum of all axes", "e = jnp.exp(s)\nprint(e / jnp.sum(e))\n", "softmax", "jax.nn.softmax(s, axis=None)"),
    ("a sum's axes kept by [:, None]", "e = jnp.exp(s)\nprint(e / jnp.sum(e, axis=1)[:, None])\n", "softmax",
     "jax.nn.softmax(s, axis=1)"),
    ("from jax.numpy import", "from jax.numpy import exp, log, sum\nprint(log(sum(exp(x))))\n", "logsumexp",
     "jax.nn.logsumexp(x)"),
    # a sigmoid or a softmax that is exactly 1 (or 0) in any float, under `log`
    ("log(1 - sigmoid)", "import jax\nprint(jnp.log(1.0 - jax.nn.sigmoid(x @ w)))\n", "log_sigmoid",
     "jax.nn.log_sigmoid(-(x @ w))"),
    ("log1p(-sigmoid) of a name", "import jax\np = jax.nn.sigmoid(z)\nprint(jnp.log1p(-p))\n", "log_sigmoid",
     "jax.nn.log_sigmoid(-z)"),
    ("log(sigmoid) through from-imports", "from jax.nn import sigmoid\nprint(jnp.log(sigmoid(z)))\n", "log_sigmoid",
     "jax.nn.log_sigmoid(z)"),
    ("log(expit)", "from jax.scipy.special import expit\nprint(jnp.log(expit(z)))\n", "log_sigmoid",
     "jax.nn.log_sigmoid(z)"),
    ("log(softmax)", "import jax\nprint(jnp.log(jax.nn.softmax(s, axis=-1)))\n", "log_softmax",
     "jax.nn.log_softmax(s, axis=-1)"),
]
NOT_WRITTEN = [
    ("exp alone", HEAD + "print(jnp.exp(19909.0))\n"),
    ("NumPy's", "import numpy as jnp\nprint(jnp.log(1 + jnp.exp(3.0)))\n"),
    ("a parameter, not the module's name", HEAD + "e = jnp.exp(2.0)\ndef f(e):\n    return jnp.log(1 + e)\n"),
    ("bound twice", HEAD + "e = jnp.exp(2.0)\ne = 3.0\nprint(jnp.log(1 + e))\n"),
    ("log(2 + exp)", HEAD + "print(jnp.log(2 + jnp.exp(3.0)))\n"),
    ("log(f(1) + exp)", HEAD + "print(jnp.log(jnp.square(1.0) * 2 + jnp.exp(3.0)))\n"),
    ("log(g(1) + exp)", HEAD + "def g(a):\n    return a + 1\nprint(jnp.log(g(1.0) + jnp.exp(3.0)))\n"),
    ("a softmax whose sum does not broadcast back", HEAD + "e = jnp.exp(s)\nprint(e / jnp.sum(e, axis=1))\n"),
    ("a softmax of another exp", HEAD + "print(jnp.exp(s) / jnp.sum(jnp.exp(t), keepdims=True))\n"),
    ("not Python", "print(jnp.log(1 + jnp.exp(3.0))\n"),
    ("a 0 written in", HEAD + "print(jnp.log(1.0 - 1.0))\n"),
    ("log(2 - sigmoid)", "import jax\n" + HEAD + "print(jnp.log(2.0 - jax.nn.sigmoid(z)))\n"),
    ("log1p(sigmoid)", "import jax\n" + HEAD + "print(jnp.log1p(jax.nn.sigmoid(z)))\n"),
]


@pytest.mark.parametrize("name, body, formula, written", WRITTEN, ids=[w[0] for w in WRITTEN])
def test_a_formula_written_by_hand_is_found_and_written_as_jaxs_function(name, body, formula, written):
    program = body if body.startswith("from jax.numpy") else HEAD + body
    assert stable_fix.formulas(program) == [formula]
    fixed = stable_fix.rewritten(program, formula)
    assert written in fixed and "import jax\n" in fixed
    assert stable_fix.rewritten(program, "softmax" if formula != "softmax" else "softplus") == ""


@pytest.mark.parametrize("name, program", NOT_WRITTEN, ids=[n[0] for n in NOT_WRITTEN])
def test_what_is_not_the_formula_is_left_alone(name, program):
    assert stable_fix.formulas(program) == []
    assert all(stable_fix.rewritten(program, formula) == "" for formula in stable_fix.FORMULAS)


def test_the_rewritten_program_runs_through_where_the_original_overflows_float64(tmp_path):
    program = (HEAD + "import numpy as np\nfrom scipy.special import logsumexp\nz = [1000.0, 2.0]\n"
               "np.testing.assert_allclose(jnp.log(jnp.sum(jnp.exp(jnp.array(z)))), logsumexp(z), rtol=1e-5)\n")
    (tmp_path / "before").mkdir(), (tmp_path / "after").mkdir()
    assert run_text(program, tmp_path / "before").returncode != 0
    assert run_text(stable_fix.rewritten(program, "logsumexp"), tmp_path / "after").returncode == 0


def test_a_log_of_one_minus_a_sigmoid_that_float64_rounds_to_1_too_runs_through_rewritten(tmp_path):
    """`sigmoid(40)` is exactly 1 in float64 too: only `log_sigmoid` keeps `log` off its pole."""
    program = ("import jax\n" + HEAD + 'jax.config.update("jax_enable_x64", True)\n'
               "z = jnp.array(40.0)\nloss = jnp.log(1.0 - jax.nn.sigmoid(z))\nassert jnp.isfinite(loss), loss\n")
    (tmp_path / "before").mkdir(), (tmp_path / "after").mkdir()
    assert run_text(program, tmp_path / "before").returncode != 0
    fixed = stable_fix.rewritten(program, "log_sigmoid")
    assert "jax.nn.log_sigmoid(-z)" in fixed
    assert run_text(fixed, tmp_path / "after").returncode == 0
