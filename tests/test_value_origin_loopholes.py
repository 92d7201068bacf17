"""The search's loopholes against a non-finite value's origin (`reducer.faults.origin`), one row each.

Every row is a candidate the search met or could meet in place of a real failing program: a
constant behind a lambda or a function, a random zero, NumPy alone, a forward `-inf` in place of a
gradient's NaN, an Inf in place of a NaN, a `sqrt` outside its domain for one at its edge, a check
that fails without the bug, an input the call rules out (a matrix that is not square), a NaN written
in for one a call chooses. Each must be
told apart from its original by the guard the row names (the field that guard sets differs), and
each row is run again with that guard switched off to show that the guard is what tells them apart.
A NaN that float32's rounding put outside a domain (a one-pass variance below 0), or at a pole
under a derivative (`log(1 - sigmoid(z))` under `grad`), is held to the arithmetic in float64: a
value written in, or computed by NumPy, stays outside it. An overflow
that float64 takes away is held to both sides: it passes
made float64, and fails again with the origin's operation alone in float32; one that float64 does not
take away, to the formula written by hand whose stable form does (a `log(1 - sigmoid(z))` at a
sigmoid of exactly 1 in float64 too, to `log_sigmoid`). The faithful
reductions at the end must be accepted. All runs are real: the candidates run in
fresh interpreters with the fix patched into JAX."""
from __future__ import annotations

from pathlib import Path

import tempfile

import pytest

from oracles.base import Signature
from oracles.nonfinite import signature as nonfinite
from oracles.own_check import OwnCheck
from reducer.faults.origin import ValueOrigin
from conftest import run_text

pytestmark = pytest.mark.slow

HEAD = "import jax\nimport jax.numpy as jnp\n"
#: float32 readings of a stuck sensor: 4096.1 plus noise of 1e-3
READINGS = "import numpy as np\nx = jnp.asarray(np.float32(4096.1) + np.float32(1e-3) * np.sin(np.arange(64, dtype=np.float32)))\n"
STANDARDISED = "z = (x - jnp.mean(x)) / jnp.sqrt(jnp.mean(x ** 2) - jnp.mean(x) ** 2)\nassert jnp.isfinite(z).all()\n"
VONMISES = "from jax.scipy.stats import vonmises\n"
ORIGINALS = {
    # the `where` trap: a NaN made in the gradient of `log`, masked forward
    "where-log": "assert jnp.isfinite(jax.grad(lambda p: jnp.where(p > 0, p * jnp.log(p), 0.0))(0.0))\n",
    # a norm at zero under `grad`: a NaN, the infinite derivative of `sqrt` times a zero
    "norm": "assert jnp.isfinite(jax.grad(lambda x: jnp.linalg.norm(x) ** 2)(jnp.zeros(1))).all()\n",
    # the log of a softmax that underflowed: an Inf made forward by `log`, of an `exp` that gave 0
    "softmax-log": "assert jnp.isfinite(-jnp.log(jax.nn.softmax(jnp.array([0.0, 200.0]))[0]))\n",
    # a hand-written softplus against a NumPy reference: `exp` overflows float32, not float64
    "overflow": "import numpy as np\nx = [1.0, 100.0]\n"
                "np.testing.assert_allclose(jnp.log(1 + jnp.exp(jnp.array(x))), np.logaddexp(0, x), rtol=1e-5)\n",
    # the same overflow read forward by the check, after a gradient's Inf that JAX's checks meet first
    # and that never reaches the check (a training step's, skipped by the optimizer)
    "overflow-after-a-gradient": "import numpy as np\nslope = jax.grad(jnp.exp)(100.0)\nx = jnp.array([1.0, 100.0])\n"
                                 "np.testing.assert_allclose(jnp.log(1 + jnp.exp(x)), np.logaddexp(0, x), rtol=1e-5)\n",
    # an overflow in values a float64 program keeps float32 (a Flax layer's): `exp` alone in float64 fixes it
    "float32-overflow": "x = jnp.array([1.0, 146.0], jnp.float32)\nassert jnp.isfinite(jnp.exp(x)).all()\n",
    # a hand-written log-sum-exp against SciPy's: `exp` overflows float64 too; JAX's function is the fix
    "logsumexp": "import numpy as np\nfrom scipy.special import logsumexp\nz = [1000.0, 2.0]\n"
                 "np.testing.assert_allclose(jnp.log(jnp.sum(jnp.exp(jnp.array(z)))), logsumexp(z), rtol=1e-5)\n",
    # a forward recursion's likelihood (an HMM's, never rescaled): its matrix product underflows step by step
    "likelihood-underflow": "A = jnp.full((2, 2), 0.5)\n"
                            "a, _ = jax.lax.scan(lambda a, _: ((a @ A) * 0.3, None), jnp.ones(2), None, length=120)\n"
                            "assert jnp.isfinite(jnp.log(a.sum()))\n",
    # a hand-written mixture log-likelihood whose every term underflowed: `log(0)`; JAX's function is the fix
    "mixture-underflow": "z = jnp.array([-2000.0, -2100.0])\nassert jnp.isfinite(-jnp.log(jnp.sum(jnp.exp(z))))\n",
    # a cross-entropy with a log-sigmoid written by hand: `exp(200)` overflows, `1 / inf` is the 0 that
    # `log` makes `-inf`, and the label's 0 times it the checked NaN
    "log-sigmoid": "y = jnp.array([0.0, 1.0])\nz = jnp.array([-200.0, 1.0])\n"
                   "assert jnp.isfinite(jnp.sum(y * jnp.log(1.0 / (1.0 + jnp.exp(-z)))))\n",
    # a layer norm's `sqrt` of a zero variance under `grad`: the program raises on the NaN gradient, in a
    # statement that reads no non-finite value (an Equinox training loop's)
    "nan-checks-raise": "g = jax.grad(lambda x: jnp.sqrt(jnp.var(x)))(jnp.ones(3))\nloss = 1.0\n"
                        "if not jnp.isfinite(g).all():\n    raise FloatingPointError(f'NaN in gradients (loss {loss})')\n",
    # a fractional power masked by a `where` under `grad`: its derivative at 0 is infinite, the mask's 0 times
    # it the NaN (an unseen Equinox spectral-gain loss, `jnp.power(gain * noisy, 0.3)` at padded frames)
    "where-power": "assert jnp.isfinite(jax.grad(lambda a: jnp.where(a > 0, a ** 0.3, 0.0))(0.0))\n",
    # a Cholesky factor of a rank-deficient Gram matrix: NaN, with no fix of one operation known
    "cholesky": "assert jnp.isfinite(jnp.linalg.cholesky(jnp.ones((2, 2)))).all()\n",
    # a one-pass variance of readings at a large offset: below 0 in float32 only, its `sqrt` NaN; the inner
    # `where` fixes it, and the sum in float64 is its cause
    "variance-rounding": f"{READINGS}assert jnp.isfinite(jnp.sqrt(jnp.mean(x ** 2) - jnp.mean(x) ** 2))\n",
    # the readings standardised by it: `sqrt`'s 0 divides by 0 next, so no fix of `sqrt` is the program's;
    # the arithmetic in float64 is (`fix=float64-arithmetic`)
    "standardised-rounding": f"{READINGS}{STANDARDISED}",
    # an ordinal model's `-log(1 - sigmoid(z))` under `grad` at a `z` where the sigmoid rounds to 1 in
    # float32: `log`'s derivative at its pole; the program made float64 runs through (an unseen program's)
    "sigmoid-rounding-gradient": "assert jnp.isfinite(jax.grad(lambda eta: -jnp.log(1.0 - jax.nn.sigmoid(3.0 - eta)))"
                                 "(-20.0))\n",
    # a hand-written `log(1 - sigmoid(z))` at a `z` where the sigmoid is exactly 1 in float64 too: no float
    # keeps `log` off its pole, `jax.nn.log_sigmoid` does (an unseen Equinox program's `error_if` met it)
    "sigmoid-saturated": "assert jnp.isfinite(jnp.log(1.0 - jax.nn.sigmoid(jnp.array(90.0))))\n",
    # JAX's `bessel_jn` in float32 below about 3: its backward recurrence (a `scan`) overflows to inf - inf;
    # no fix of the program's takes the NaN away (an unseen Flax program's Bessel basis met it)
    "bessel": "assert jnp.isfinite(jax.scipy.special.bessel_jn(jnp.float32(1.0), v=0)).all()\n",
    # JAX's `vonmises.logpdf` at kappa 0 chooses a NaN constant where SciPy's is -log(2 pi) (an unseen Equinox
    # program's uniform prior); under `jit` and `value_and_grad` JAX's checks stopped at `0.01 * prior`
    "vonmises": VONMISES + "def loss(mu):\n    prior = -vonmises.logpdf(mu, 0.0).mean()\n"
                "    return -vonmises.logpdf(mu, 4.0).mean() + 0.01 * prior\n"
                "value, _ = jax.jit(jax.value_and_grad(loss))(jnp.zeros(3))\nassert jnp.isfinite(value)\n",
    # JAX's `t.logpdf` at df=inf (the Gaussian limit) is NaN, SciPy's the normal density: in a jitted training
    # step the call computed by SciPy gets the first check past (the gradient, JAX's derivative, is NaN), and
    # every candidate must get past its own so (an unseen Optax regression's baseline)
    "student-t": "from jax.scipy.stats import t\nstep = jax.jit(jax.value_and_grad(lambda w: -t.logpdf(w, jnp.inf).mean()))\n"
                 "w = jnp.zeros(3)\nfor _ in range(3):\n    value, g = step(w)\n    assert jnp.isfinite(value)\n"
                 "    w = w - 0.1 * g\n",
}
#: a recurrence of the program's own that overflows to inf - inf in a `scan`, as `bessel_jn`'s body does
OWN_RECURRENCE = ("c, _ = jax.lax.scan(lambda c, x: ((c[1], x * c[1] - c[0]), None), (1.0, 1.0), jnp.full(60, 1e3))\n"
                  "assert jnp.isfinite(c[1])\n")
#: a Cholesky factor of a (1, 2) matrix: JAX symmetrises it by broadcasting, a NaN like a singular one's
NOT_SQUARE = "assert jnp.isfinite(jax.lax.linalg.cholesky(jnp.ones((1, 2)))).all()\n"
#: the field each guard sets where a candidate's origin differs from the original's
FIELD = {"fix": "op", "transformation": "in", "cause": "cause", "kind": "value", "contract": "op", "domain": "op",
         "precision": "op", "operation": "op", "call": "op"}
LOOPHOLES = [
    ("where-log", "constant-behind-a-lambda", "assert jnp.isfinite((lambda x: float('nan'))(0.0))\n", "fix"),
    ("where-log", "constant-behind-a-function", "def f(x):\n    return jnp.nan\nassert jnp.isfinite(f(1.0))\n", "fix"),
    ("where-log", "numpy-alone", "import numpy\nassert numpy.isfinite(numpy.float32(0) * numpy.log(numpy.float32(0)))\n",
     "fix"),
    ("where-log", "fails-without-the-bug", "assert jnp.isfinite(jnp.nan * jnp.log(2.0))\n", "fix"),
    ("where-log", "forward-inf-for-a-gradient-nan", "assert jnp.isfinite(jax.lax.log(0.0))\n", "kind"),
    ("where-log", "forward-nan-for-a-gradient-nan", "assert jnp.isfinite(jnp.log(-1.0))\n", "transformation"),
    # the `where` dropped: the gradient's NaN is still made by `log`, but the checked forward value is NaN too
    ("where-log", "a-forward-nan-beside-the-gradient-nan",
     "assert all(jnp.isfinite(x) for x in jax.value_and_grad(lambda a: a * jnp.log(a))(0.0))\n", "transformation"),
    ("norm", "inf-for-a-nan", "assert jnp.isfinite(jax.grad(jax.lax.sqrt)(0.0))\n", "kind"),
    # its exponent cut to 0: the NaN is now JAX's rule for `x ** 0.0` at 0 (0 times an infinity), whose
    # derivative is 0: no edge of its domain, and no `where` (the unseen program's reduction met it)
    ("where-power", "a-rules-nan-for-an-infinite-derivative", "assert jnp.isfinite(jax.grad(lambda a: a ** 0.0)(0.0))\n",
     "domain"),
    # a `sqrt` outside its domain (NaN forward too) for the original's at its edge (finite, its derivative not)
    ("norm", "outside-the-domain-for-its-edge", "assert jnp.isfinite(jax.grad(lambda a: jnp.sum(jnp.sqrt(a)))(-1.0))\n",
     "domain"),
    ("softmax-log", "nan-for-an-inf", "assert jnp.isfinite(-jnp.log(jnp.float32(-1.0)))\n", "kind"),
    ("softmax-log", "minus-inf-for-plus-inf", "p = jax.nn.softmax(jnp.array([0.0, 200.0]))\n"
                    "assert jnp.isfinite(jnp.log(p[0]))\n", "kind"),
    ("softmax-log", "minus-inf-beside-its-derivatives-plus-inf",
     "assert all(jnp.isfinite(x) for x in jax.value_and_grad(jnp.log)(0.0))\n", "kind"),
    ("softmax-log", "random-zero", "import numpy\nassert jnp.isfinite(-jnp.log(numpy.random.default_rng().integers(1)))\n",
     "cause"),
    ("softmax-log", "literal-zero", "assert jnp.isfinite(-jnp.log(0.0))\n", "cause"),
    # an unseen HMM's cut: the recursion's underflow gone, the 0 written in
    ("likelihood-underflow", "literal-zero", "assert jnp.isfinite(jnp.log(0.0))\n", "cause"),
    ("likelihood-underflow", "an-exp-underflow-for-a-product", "assert jnp.isfinite(jnp.log(jnp.exp(-200.0)))\n",
     "cause"),
    ("softmax-log", "numpy-alone", "import numpy\nassert numpy.isfinite(-numpy.log(numpy.float32(0)))\n", "fix"),
    ("cholesky", "a-matrix-that-is-not-square", NOT_SQUARE, "contract"),
    # the 0 that the sigmoid's overflow made, read from the inputs (an unseen Flax program's cut)
    ("log-sigmoid", "a-zero-read-from-the-inputs", "import numpy\na = numpy.array([0.0, 1.0], numpy.float32)\n"
     "assert jnp.isfinite(jnp.sum(a * jnp.log(a)))\n", "cause"),
    ("log-sigmoid", "a-zero-that-underflowed", "assert jnp.isfinite(0.0 * jnp.log(jnp.exp(-200.0)))\n", "cause"),
    # the issue's own: a random number against a constant behind a lambda, no JAX left
    ("overflow", "random-number-against-a-constant-behind-a-lambda", "import numpy\nnumpy.testing.assert_allclose("
     "numpy.random.default_rng().uniform(), (lambda x: 0.0)(1.0), 0.0001, 1e-05)\n", "fix"),
    ("overflow", "an-overflow-of-float64-too", "assert jnp.isfinite(jnp.exp(jnp.array([19909.0]))).all()\n", "fix"),
    ("overflow", "another-operations-overflow", "assert jnp.isfinite(jnp.square(jnp.array(1e20)))\n", "precision"),
    ("overflow", "nan-for-an-inf", "assert jnp.isfinite(jnp.exp(100.0) - jnp.exp(100.0))\n", "kind"),
    # a gradient's own Inf (its cotangent times `exp`), which float64 fixes as well: not the forward value's
    ("overflow-after-a-gradient", "a-gradients-inf-for-a-forward-inf",
     "assert jnp.isfinite(jax.grad(lambda x: jnp.exp(x) * 1e10)(80.0))\n", "transformation"),
    # the float64 values of the `exp` reach a `square` that overflows float32 after it: not `exp`'s own overflow
    ("float32-overflow", "an-overflow-after-it",
     "x = jnp.array([50.0], jnp.float32)\nassert jnp.isfinite(jnp.square(jnp.exp(x))).all()\n", "precision"),
    ("logsumexp", "its-exp-alone", "assert jnp.isfinite(jnp.exp(jnp.array([1000.0]))).all()\n", "fix"),
    ("logsumexp", "another-formula", "assert jnp.isfinite(jnp.log(1 + jnp.exp(1000.0)))\n", "fix"),
    ("logsumexp", "beside-another-overflow",
     "assert jnp.isfinite(jnp.log(jnp.sum(jnp.exp(jnp.array([1000.0])))) + jnp.exp(1000.0))\n", "fix"),
    ("logsumexp", "numpy-alone", "import numpy\nassert numpy.isfinite(numpy.log(numpy.sum(numpy.exp([1000.0]))))\n",
     "fix"),
    # JAX's function takes away an underflow's `-inf` as well
    ("logsumexp", "an-underflow-for-an-overflow",
     "assert jnp.isfinite(jnp.log(jnp.sum(jnp.exp(jnp.array([-1000.0])))))\n", "kind"),
    # the `log` of an underflowed `exp` alone: no formula left for JAX's function to compute
    ("mixture-underflow", "its-log-of-exp-alone", "assert jnp.isfinite(-jnp.log(jnp.exp(-2000.0)))\n", "fix"),
    # `log(0)` of an input that is already `-inf`: JAX's function gives `-inf` too
    ("mixture-underflow", "an-input-of-minus-inf",
     "assert jnp.isfinite(-jnp.log(jnp.sum(jnp.exp(jnp.array([-jnp.inf])))))\n", "fix"),
    # JAX's function takes away an overflow's `+inf` as well, but no underflow made it
    ("variance-rounding", "a-value-outside-the-domain-written-in", "assert jnp.isfinite(jnp.sqrt(-1.0))\n", "cause"),
    ("variance-rounding", "its-values-written-in",
     "assert jnp.isfinite(jnp.sqrt(jnp.float32(16778034.0) - jnp.float32(16778036.0)))\n", "cause"),
    ("variance-rounding", "numpy-alone",
     f"{READINGS}n = np.asarray(x)\nassert jnp.isfinite(jnp.sqrt(np.mean(n ** 2) - np.mean(n) ** 2))\n", "cause"),
    ("standardised-rounding", "a-value-outside-the-domain-written-in",
     "assert jnp.isfinite(jnp.ones(3) / jnp.sqrt(-1.0)).all()\n", "fix"),
    ("standardised-rounding", "numpy-alone", f"{READINGS}n = np.asarray(x)\n"
     "assert jnp.isfinite((n - n.mean()) / jnp.sqrt(np.mean(n ** 2) - np.mean(n) ** 2)).all()\n", "fix"),
    ("standardised-rounding", "another-operations-nan", f"{READINGS}{STANDARDISED.replace('jnp.sqrt', 'jnp.log')}",
     "operation"),
    # `log`'s derivative at a 0 written in, or at a sigmoid of 1 in float64 too: no rounding made them
    ("sigmoid-rounding-gradient", "a-zero-written-in",
     "assert jnp.isfinite(jax.grad(lambda x: jnp.log(0.0 * x) * 0.0)(1.0))\n", "cause"),
    ("sigmoid-rounding-gradient", "a-sigmoid-of-1-in-float64-too",
     "assert jnp.isfinite(jax.grad(lambda eta: -jnp.log(1.0 - jax.nn.sigmoid(3.0 - eta)))(-2000.0))\n", "cause"),
    # the sigmoid's 1 written in: no formula left whose stable form keeps `log` off its pole
    ("sigmoid-saturated", "a-zero-written-in", "assert jnp.isfinite(jnp.log(1.0 - 1.0))\n", "fix"),
    ("mixture-underflow", "an-overflow-for-an-underflow",
     "assert jnp.isfinite(jnp.log(jnp.sum(jnp.exp(jnp.array([1000.0])))))\n", "cause"),
    # the call's body written out: its NaN is now the program's own arithmetic (the unseen program's cut)
    ("bessel", "its-recurrence-written-out", OWN_RECURRENCE, "call"),
    # the name kept beside it: JAX's checks place the value in the program's `scan`, not in the call
    ("bessel", "its-name-imported-beside-its-recurrence", "from jax.scipy.special import bessel_jn\n" + OWN_RECURRENCE,
     "call"),
    # the NaN still made inside the call, by a check that fails with the call computed right too (a reference
    # moved: J_1(1) is 0.44): not the bug's reproducer
    ("bessel", "a-check-that-fails-with-the-call-right", "from jax.scipy.special import bessel_jn\n"
     "v = bessel_jn(jnp.ones(1), v=1)\nassert jnp.isfinite(v).all() and (v[1] > 1).all()\n", "fix"),
    # a NaN constant the program's own `where` chooses: no longer made inside `logpdf`
    ("vonmises", "a-nan-chosen-by-its-own-where", "x = jnp.where(jnp.zeros(3) > 0, 1.0, jnp.nan)\n"
     "assert jnp.isfinite(x.mean())\n", "call"),
    # the call kept, at a kappa SciPy's `logpdf` rules out too: NaN with the call computed right
    ("vonmises", "a-kappa-outside-its-domain", VONMISES + "assert jnp.isfinite(vonmises.logpdf(0.0, -1.0))\n", "fix"),
    # df cut from inf to 0 (`float()`, the search's): a NaN of `logpdf` too, but SciPy's is NaN there as well
    ("student-t", "a-df-outside-its-domain", "from jax.scipy.stats import t\nassert jnp.isfinite(t.logpdf(0.0, float()))\n",
     "fix"),
]
#: rows that another guard rejects as well, by name: the recurrence written out does not run through with
#: `bessel_jn` computed in float64 either (it does not call it), so `fix` rejects it beside `call`
ALSO_REJECTED_BY = {"its-recurrence-written-out": "fix", "its-name-imported-beside-its-recurrence": "fix",
                    "a-nan-chosen-by-its-own-where": "fix"}
FAITHFUL = [
    ("where-log", "def h(p):\n    return jnp.sum(jnp.where(p > 0, p * jnp.log(p), 0.0))\n"
                  "assert jnp.isfinite(jax.grad(h)(jnp.array([0.5, 0.0]))).all()\n"),
    ("where-log", "assert all(jnp.isfinite(x) for x in jax.value_and_grad(lambda a: jnp.where(a > 0, a * jnp.log(a), 0.0))"
                  "(0.0))\n"),
    ("norm", "d = jnp.zeros((2, 3))\nassert jnp.isfinite(jax.grad(lambda d: jnp.sum(jnp.linalg.norm(d, axis=-1) ** 2))(d)).all()\n"),
    ("softmax-log", "p = jax.nn.softmax(jnp.array([[1.0, 150.0], [0.0, 1.0]]))\nassert jnp.isfinite(-jnp.log(p).sum())\n"),
    ("cholesky", "assert jnp.isfinite(jax.lax.linalg.cholesky(jnp.ones((3, 3)))).all()\n"),
    ("where-power", "g = jnp.array([0.5, 0.5])\nx = jnp.array([1.0, 0.0])\n"
                    "assert jnp.isfinite(jax.grad(lambda g: jnp.where(x > 0, jnp.power(g * x, 0.3), 0.0).sum())(g)).all()\n"),
    ("log-sigmoid", "assert jnp.isfinite(0.0 * jnp.log(1.0 / (1.0 + jnp.exp(200.0))))\n"),
    ("overflow", "import numpy as np\nnp.testing.assert_allclose(jnp.log(1 + jnp.exp(100.0)), 100.0)\n"),
    ("overflow", "assert jnp.isfinite(jnp.exp(100.0))\n"),
    ("float32-overflow", "assert jnp.isfinite(jnp.exp(jnp.float32(100.0)))\n"),
    ("logsumexp", "x = jnp.array([1000.0])\nassert jnp.isfinite(jnp.log(jnp.sum(jnp.exp(x))))\n"),
    ("logsumexp", "def f(a):\n    b = jnp.exp(a)\n    c = jnp.sum(b)\n    return jnp.log(c)\n"
                  "assert jnp.isfinite(f(jnp.array([800.0, 1.0])))\n"),
    ("mixture-underflow", "assert jnp.isfinite(-jnp.log(jnp.sum(jnp.exp(jnp.array([-2000.0])))))\n"),
    ("likelihood-underflow", "assert jnp.isfinite(jnp.log((jnp.full(2, 1e-30) @ jnp.full((2, 2), 1e-10)).sum()))\n"),
    ("mixture-underflow", "def f(a):\n    b = jnp.exp(a)\n    c = b.sum()\n    return -jnp.log(c)\n"
                          "assert jnp.isfinite(f(jnp.array([-900.0, -1000.0])))\n"),
    ("variance-rounding", f"{READINGS}assert jnp.isfinite(jnp.sqrt(jnp.sum(x ** 2) / 64 - jnp.mean(x) ** 2))\n"),
    ("standardised-rounding", f"{READINGS}assert jnp.isfinite(jnp.sqrt(jnp.mean(x ** 2) - jnp.mean(x) ** 2))\n"),
    ("sigmoid-rounding-gradient", "assert jnp.isfinite(jax.grad(lambda z: jnp.log(1.0 - jax.nn.sigmoid(z)))(23.0))\n"),
    ("sigmoid-saturated", "p = jax.nn.sigmoid(50.0)\nassert jnp.isfinite(jnp.log1p(-p))\n"),
    ("bessel", "from jax.scipy.special import bessel_jn\nassert jnp.isfinite(bessel_jn(jnp.ones(2), v=1)).all()\n"),
    ("vonmises", VONMISES + "assert jnp.isfinite(vonmises.logpdf(0.5, 0.0))\n"),
    ("student-t", "from jax.scipy.stats import t\nvalue = t.logpdf(0.0, float('inf'))\nassert jnp.isfinite(value)\n"),
]


def runner(folder):
    """Runs a program as a candidate, each run in a folder of its own (the origin's first runs go
    side by side)."""
    return lambda text: run_text(text, Path(tempfile.mkdtemp(dir=folder)))


@pytest.fixture(scope="module")
def origins(tmp_path_factory):
    """Each original's origin, established once from real runs."""
    folder = tmp_path_factory.mktemp("originals")
    found = {}
    for name, body in ORIGINALS.items():
        localiser = ValueOrigin(runner(folder))
        fault = localiser.locate(HEAD + body, None, None)
        found[name] = nonfinite("AssertionError", "assert", fault.fields, "")
    return found


def _alone(guard: str) -> tuple[str, ...]:
    """The guards that hold a candidate to `guard` alone: with the run under the original's fix, which
    every other guard reads."""
    return tuple(dict.fromkeys(("fix", guard)))


def _seen(original: Signature, candidate: str, folder, guards=ValueOrigin.GUARDS) -> Signature:
    localiser = ValueOrigin(runner(folder), guards=guards)
    localiser.expect(original)
    fault = localiser.locate(HEAD + candidate, None, None)
    return nonfinite("AssertionError", "assert", fault.fields, "")


def test_the_originals_have_the_origins_of_their_failures(origins):
    assert dict(origins["where-log"].fields)["value"] == "nan" and origins["where-log"].get("in") == "grad"
    assert (origins["where-log"].get("op"), origins["norm"].get("op")) == ("log", "sqrt")
    assert origins["norm"].get("value") == "nan" and origins["norm"].get("in") == "grad"
    assert (origins["norm"].get("point"), origins["where-log"].get("point")) == ("edge", "pole")
    power = origins["where-power"]  # an infinite derivative at the edge of `pow`'s domain, masked: a NaN
    assert (power.get("value"), power.get("in"), power.get("op"), power.get("point")) == ("nan", "grad", "pow", "edge")
    softmax = origins["softmax-log"]
    assert (softmax.get("value"), softmax.get("in"), softmax.get("op"), softmax.get("cause")) == \
        ("+inf", "forward", "log", "exp-underflow")
    assert (origins["cholesky"].get("op"), origins["cholesky"].get("fix")) == ("cholesky", "none")
    sigmoid = origins["log-sigmoid"]  # a NaN at the pole of `log`, of the 0 an overflow made
    assert (sigmoid.get("value"), sigmoid.get("in"), sigmoid.get("op"), sigmoid.get("point"), sigmoid.get("cause")) == \
        ("nan", "forward", "log", "pole", "exp-overflow")
    assert "cause" not in dict(origins["where-log"].fields)  # made in the gradient of a 0 written in: no cause
    rounded = origins["sigmoid-rounding-gradient"]  # made in the gradient at a 0 float32's rounding made
    assert (rounded.get("value"), rounded.get("in"), rounded.get("op"), rounded.get("point"), rounded.get("cause")) == \
        ("nan", "grad", "log", "pole", "rounding")
    raised = origins["nan-checks-raise"]  # the forward fix leaves the raise where it was: not `forward`
    assert (raised.get("value"), raised.get("in"), raised.get("op")) == ("nan", "grad", "sqrt"), raised
    overflow = origins["overflow"]
    assert (overflow.get("value"), overflow.get("in"), overflow.get("op"), overflow.get("fix")) == \
        ("+inf", "forward", "exp", "float64")
    after = origins["overflow-after-a-gradient"]  # where the checked value is made, not JAX's first Inf
    assert (after.get("value"), after.get("in"), after.get("op"), after.get("fix")) == ("+inf", "forward", "exp", "float64")
    narrow = origins["float32-overflow"]
    assert (narrow.get("value"), narrow.get("op"), narrow.get("fix")) == ("+inf", "exp", "float64")
    by_hand = origins["logsumexp"]
    assert (by_hand.get("value"), by_hand.get("in"), by_hand.get("op"), by_hand.get("fix")) == \
        ("+inf", "forward", "exp", "logsumexp")
    likelihood = origins["likelihood-underflow"]  # the 0 the recursion's matrix product made
    assert (likelihood.get("value"), likelihood.get("op"), likelihood.get("cause")) == \
        ("-inf", "log", "dot_general-underflow")
    variance = origins["variance-rounding"]  # the inner `where` fixes it; the sum's rounding is its cause
    assert (variance.get("value"), variance.get("in"), variance.get("op"), variance.get("point"), variance.get("fix"),
            variance.get("cause")) == ("nan", "forward", "sqrt", "outside", "inner-where", "reduce_sum-rounding")
    standardised = origins["standardised-rounding"]  # no fix of `sqrt`: the arithmetic before it in float64
    assert (standardised.get("value"), standardised.get("in"), standardised.get("op"), standardised.get("fix")) == \
        ("nan", "forward", "sqrt", "float64-arithmetic")
    assert standardised.get("cause").endswith("-rounding") and "reduce_sum" in standardised.get("cause")
    saturated = origins["sigmoid-saturated"]  # no float keeps the sigmoid off 1: JAX's `log_sigmoid` is the fix
    assert (saturated.get("value"), saturated.get("in"), saturated.get("op"), saturated.get("point"),
            saturated.get("fix")) == ("-inf", "forward", "log", "pole", "log_sigmoid"), saturated
    mixture = origins["mixture-underflow"]
    assert (mixture.get("value"), mixture.get("in"), mixture.get("op"), mixture.get("cause"), mixture.get("fix")) == \
        ("+inf", "forward", "log", "exp-underflow", "logsumexp")
    bessel = origins["bessel"]  # no fix of the program's: held as JAX's checks name it, inside the call, and to
    # running through with the call alone computed in float64
    assert (bessel.get("value"), bessel.get("in"), bessel.get("fix"), bessel.get("from")) == \
        ("nan", "forward", "call-in-float64", "bessel_jn"), bessel
    assert bessel.get("op") != "bessel_jn"
    chosen = origins["vonmises"]  # where the call's `where` chooses the NaN constant, not a line that reads it
    assert (chosen.get("value"), chosen.get("in"), chosen.get("op"), chosen.get("fix"), chosen.get("from")) == \
        ("nan", "forward", "select_n", "call-by-namesake", "logpdf"), chosen
    limit = origins["student-t"]  # SciPy's `logpdf` gets the jitted step's check past, not through the loop
    assert (limit.get("value"), limit.get("in"), limit.get("fix"), limit.get("from")) == \
        ("nan", "forward", "call-by-namesake", "logpdf"), limit


def test_a_nan_written_in_is_no_operation_s_with_every_guard_off(origins, tmp_path):
    """`jnp.float32(jnp.nan)` in place of the call (what the search made of the unseen program): JAX's
    checks stopped at its conversion; now they meet no operation, with no guard on: no origin, not the
    original's failure."""
    localiser = ValueOrigin(runner(tmp_path), guards=())
    localiser.expect(origins["vonmises"])
    assert localiser.locate(HEAD + "assert jnp.isfinite(jnp.float32(jnp.nan))\n", None, None) is None


@pytest.mark.parametrize("original, name, candidate, guard", LOOPHOLES, ids=[f"{r[0]}:{r[1]}" for r in LOOPHOLES])
def test_each_loophole_is_rejected_by_its_guard(origins, tmp_path, original, name, candidate, guard):
    """With the fix's run and the row's guard alone (another may reject it first when all are on, and
    each guard only adds a reason to reject: what this rejects, all of them reject)."""
    wanted = origins[original]
    seen = _seen(wanted, candidate, tmp_path, _alone(guard))
    assert not OwnCheck().same(wanted, seen)
    assert seen.get(FIELD[guard]) != wanted.get(FIELD[guard]), seen
    for alone in ((guard,), (ALSO_REJECTED_BY[name],)) if name in ALSO_REJECTED_BY else ():  # each rejects it alone
        assert not OwnCheck().same(wanted, _seen(wanted, candidate, tmp_path, alone)), alone


@pytest.mark.parametrize("original, name, candidate, guard", LOOPHOLES, ids=[f"{r[0]}:{r[1]}" for r in LOOPHOLES])
def test_with_its_guard_off_the_loophole_gets_past_it(origins, tmp_path, original, name, candidate, guard):
    """The row above fails with its guard switched off (and any other that rejects it as well): what it
    asserts no longer holds."""
    wanted = origins[original]
    off = (guard, ALSO_REJECTED_BY.get(name))
    seen = _seen(wanted, candidate, tmp_path, tuple(g for g in _alone(guard) if g not in off))
    assert seen.get(FIELD[guard]) == wanted.get(FIELD[guard]), seen


@pytest.mark.parametrize("original, candidate", FAITHFUL, ids=[r[0] for r in FAITHFUL])
def test_faithful_reductions_keep_the_origin(origins, tmp_path, original, candidate):
    wanted = origins[original]
    assert OwnCheck().same(wanted, _seen(wanted, candidate, tmp_path))


def test_an_original_that_breaks_a_contract_says_so_and_a_resumed_reduction_keeps_the_checks_off(tmp_path):
    """The (1, 2) Cholesky input as the original itself: its signature records `contract=broken`, and a
    localiser told the failure by that signature (a resumed reduction's, the written-back script's)
    judges the original as the same failure, not as an input the call rules out."""
    program = HEAD + NOT_SQUARE
    fault = ValueOrigin(runner(tmp_path)).locate(program, None, None)
    wanted = nonfinite("AssertionError", "assert", fault.fields, "")
    assert wanted.get("contract") == "broken" and wanted.get("op") != "invalid-input"
    resumed = ValueOrigin(runner(tmp_path))
    resumed.expect(wanted)
    seen = nonfinite("AssertionError", "assert", resumed.locate(program, None, None).fields, "")
    assert OwnCheck().same(wanted, seen), seen
