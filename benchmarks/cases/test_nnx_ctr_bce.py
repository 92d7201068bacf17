"""Pytest-style tests for a hand-written binary cross-entropy-with-logits loss used by
a Flax NNX click-through-rate model. The tests compare the float32 JAX loss against a
float64 NumPy reference (np.logaddexp), check shapes, and run a couple of Optax
training steps on the NNX model; they are executed at the bottom under __main__.
Origin: user code bce = log(1 + exp(z)) - y*z evaluated in float32; for a confident logit z = 100, exp(z) overflows to inf, giving loss inf (NumPy float32 does the same) vs the finite float64 reference 0.0.
Fix: use jnp.logaddexp(0.0, z) - y * z (or optax.sigmoid_binary_cross_entropy).
Owner: program
"""
import numpy as np
import jax
import jax.numpy as jnp
import optax
from flax import nnx


def bce_with_logits(logits, labels):
    # softplus(z) - y*z, the usual stable-looking rewrite of -[y log s + (1-y) log(1-s)]
    return jnp.log1p(jnp.exp(logits)) - labels * logits


def np_reference(logits, labels):
    z = np.asarray(logits, np.float64)
    y = np.asarray(labels, np.float64)
    return np.logaddexp(0.0, z) - y * z


class CTRModel(nnx.Module):
    def __init__(self, n_features, rngs):
        self.emb = nnx.Linear(n_features, 16, rngs=rngs)
        self.head = nnx.Linear(16, 1, rngs=rngs)

    def __call__(self, x):
        return self.head(nnx.relu(self.emb(x)))[:, 0]


def make_batch(seed=0, n=64, f=10):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, f)).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.float32)
    return jnp.asarray(x), jnp.asarray(y)


def test_loss_shape():
    x, y = make_batch()
    model = CTRModel(x.shape[1], nnx.Rngs(0))
    assert bce_with_logits(model(x), y).shape == (64,)


def test_loss_matches_reference_moderate_logits():
    z = np.linspace(-8, 8, 33).astype(np.float32)
    y = (np.arange(33) % 2).astype(np.float32)
    np.testing.assert_allclose(bce_with_logits(z, y), np_reference(z, y), rtol=1e-5, atol=1e-6)


def test_loss_matches_reference_saturated_logits():
    # very confident predictions show up once the CTR model is well trained
    z = np.array([-100.0, -30.0, 30.0, 100.0], np.float32)
    y = np.array([0.0, 0.0, 1.0, 1.0], np.float32)
    np.testing.assert_allclose(bce_with_logits(z, y), np_reference(z, y), rtol=1e-5, atol=1e-6)


def test_training_reduces_loss():
    x, y = make_batch(1)
    model = CTRModel(x.shape[1], nnx.Rngs(1))
    opt = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

    @nnx.jit
    def step(model, opt, x, y):
        def loss_fn(m):
            return bce_with_logits(m(x), y).mean()
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        opt.update(model, grads)
        return loss

    first = step(model, opt, x, y)
    for _ in range(20):
        last = step(model, opt, x, y)
    assert float(last) < float(first)


if __name__ == "__main__":
    for name, fn in list(globals().items()):
        if name.startswith("test_") and callable(fn):
            fn()
            print(f"{name} PASSED")
