"""A failing check of the program's own must still read what the program computes
(`reducer.levels.source.computed_check`): shrinking must not turn it into a check of constants."""
import pytest

from oracles.outcome import Signature
from reducer.levels.source.computed_check import holds, reads_computed_value

IMPORTS = "import sys\nimport numpy as np\nimport jax\nimport jax.numpy as jnp\n"


@pytest.mark.parametrize("body, computed", [
    ("last = 1.0\nfirst = 0.5\nassert last < first", False),
    ("def loss(w):\n    return jnp.sum(w)\nlast = loss(jnp.ones(2))\nassert last < 0.5", True),
    ("assert jnp.isfinite(jnp.nan)", False),
    ("assert jnp.isfinite(jax.grad(jnp.linalg.norm)(jnp.zeros(1))).all()", True),
    ("np.testing.assert_allclose(1.0, 2.0)", False),
    ("x = np.log1p(np.exp(3.0))\nnp.testing.assert_allclose(x, 2.0)", True),
    ("loss = jnp.ones(())\nif loss > 0:\n    raise ValueError('diverged')", True),
    ("loss = 3.0\nif loss > 0:\n    raise ValueError('diverged')", False),
    ("raise ValueError(f'{jnp.sqrt(2.0)}')", False),
    ("loss = jnp.ones(())\nwhile loss > 0:\n    sys.exit('diverged')", True),
    ("def f(a):\n    assert a > 0\nf(-1.0)", False),
    ("def f(a):\n    assert a > 0\nf(jnp.ones(()) - 2.0)", True),
    ("def fit(lr):\n    lr\n    return losses\nlosses = [1.0]\nassert fit(lr=0.9)[0] < 0", False),
    ("def fit(lr):\n    np.log(lr)\n    return losses\nlosses = [1.0]\nassert fit(lr=0.9)[0] < 0", False),
    ("def fit(lr):\n    return [float(np.log(lr))]\nassert fit(lr=0.9)[0] < 0", True),
    ("def fit():\n    def step():\n        return np.log(2.0)\n    return losses\nlosses = [1.0]\n"
     "assert fit()[0] < 0", False),
    # one name in two scopes: `losses` returned by the function that fills it with computed values
    ("def fit(lr):\n    losses = []\n    losses.append(float(np.log(lr)))\n    return losses\n"
     "losses = fit(0.9)\nassert losses[-1] < losses[0]", True),
    # a function of the script counts only when it computes; a list counts by what is put in it
    ("losses = []\nlosses.append(1.0)\nfit = lambda: losses\nassert fit()[0] < 0", False),
    ("losses = []\nlosses.append(float(jnp.ones(())))\nassert losses[-1] < losses[0]", True),
    # a method read, not called, is always true: the check no longer depends on the value
    ("assert not jnp.isnan(jnp.log(0.0)).any", False),
    ("assert not jnp.isnan(jnp.log(0.0)).any()", True),
    ("g = jnp.log(0.0)\nassert jnp.isfinite(g).all", False),
])
def test_a_check_reads_a_computed_value(body, computed):
    source = IMPORTS + body + "\n"
    line = len(source.splitlines()) - (1 if "\nf(" in body else 0)
    assert reads_computed_value(source, line) is computed


def test_only_checks_of_the_programs_own_are_held_to_it():
    source = IMPORTS + "assert jnp.isfinite(jnp.nan)\n"
    output = 'Traceback (most recent call last):\n  File "/tmp/x/repro.py", line 5, in <module>\nAssertionError\n'
    own = Signature("own-check", (("type", "AssertionError"),))
    assert not holds(own, source, output, "repro.py")
    assert not holds(Signature("nonfinite", ()), source, output, "repro.py")
    assert holds(Signature("crash", ()), source, output, "repro.py")
    assert holds(own, source, "training diverged\n", "repro.py")  # an exit with no traceback: nothing to read


def test_a_check_on_a_nan_must_still_ask_whether_the_value_is_finite():
    asks = IMPORTS + "g = jax.grad(jnp.sqrt)(0.0)\nif not jnp.isfinite(g):\n    raise FloatingPointError(g)\n"
    drifted = IMPORTS + "g = jax.grad(jnp.sqrt)(0.0)\nif not jnp.all(g == 0):\n    raise FloatingPointError(g)\n"
    assert reads_computed_value(asks, 7, finite=True) and reads_computed_value(drifted, 7)
    assert not reads_computed_value(drifted, 7, finite=True)
