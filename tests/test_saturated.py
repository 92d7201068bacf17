"""The fix of a `log` of a sigmoid that is exactly 1 (`reducer.faults.saturated`): followed from the
sigmoid to the `log` as the program runs, across the functions that split them, under `grad`, `jit`
and `vmap`; a 0 written in, or a `log` of something else, is left as it is. Real runs."""
from __future__ import annotations

import pytest

from reducer.faults import nonfinite, saturated
from reducer.faults.named_origin import fixed
from conftest import run_text

#: a model's probabilities in one function, a hand-written cross-entropy of them in another; logits
#: of 60 make the sigmoid exactly 1 in float64 too
SPLIT = ("import jax\nimport jax.numpy as jnp\nimport numpy as np\n\n"
         "def predict_proba(w, x):\n    return jax.nn.sigmoid(x @ w)\n\n"
         "def bce(p, y):\n    return -jnp.mean(y * jnp.log(p) + (1.0 - y) * jnp.log(1.0 - p))\n\n"
         "x, y = jnp.array([[60.0], [-60.0], [1.0]]), jnp.array([0.0, 1.0, 1.0])\n"
         "g = jax.jit(jax.grad(lambda w: bce(predict_proba(w, x), y)))(jnp.ones(1))\n"
         "reference = np.mean((1 / (1 + np.exp(-np.array([60.0, -60.0, 1.0]))) - [0.0, 1.0, 1.0]) * [60.0, -60.0, 1.0])\n"
         "np.testing.assert_allclose(g, [reference], rtol=1e-5)\n")
PROGRAMS = {
    "split over two functions, under jit and grad": (SPLIT, True),
    "log1p of its negation under vmap": ("import jax\nimport jax.numpy as jnp\n"
                                         "f = jax.vmap(lambda z: jnp.log1p(-jax.nn.sigmoid(z)))\n"
                                         "assert jnp.isfinite(f(jnp.array([60.0, 1.0]))).all()\n", True),
    "a 0 written in": ("import jax.numpy as jnp\nassert jnp.isfinite(jnp.log(1.0 - 1.0))\n", False),
    "the log of 2 minus a sigmoid": ("import jax\nimport jax.numpy as jnp\n"
                                     "assert jnp.log(2.0 - jax.nn.sigmoid(60.0)) == 1.0\n", False),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_sigmoid_s_log_is_computed_as_log_sigmoid_wherever_the_program_splits_it(name, tmp_path):
    program, runs_through = PROGRAMS[name]
    (tmp_path / "as-is").mkdir(), (tmp_path / "fixed").mkdir()
    assert run_text(program, tmp_path / "as-is").returncode != 0
    done = run_text(nonfinite.first_of(program, saturated.LINE), tmp_path / "fixed")
    assert (done.returncode == 0) == runs_through, done.output


def test_the_origin_s_fix_follows_it_where_no_expression_writes_the_formula():
    """The hold's fix (`named_origin.fixed`): JAX's function written in where one expression writes
    the formula, the fix followed as the program runs where none does."""
    written = "import jax\nimport jax.numpy as jnp\nprint(jnp.log(1.0 - jax.nn.sigmoid(60.0)))\n"
    assert "jax.nn.log_sigmoid(-60.0)" in fixed(written, "", saturated.FIX)
    assert saturated.LINE in fixed(SPLIT, "", saturated.FIX)
    assert fixed(SPLIT, "", "logsumexp") == SPLIT
    assert saturated.may_write(SPLIT) and not saturated.may_write("import numpy\nprint(numpy.log(0.0))\n")
