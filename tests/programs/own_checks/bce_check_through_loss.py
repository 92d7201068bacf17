"""A click-through classifier whose binary cross-entropy is written by hand from a sigmoid; a helper
compares the loss the training step uses, called with the model, with NumPy's stable float64 form
on a batch of raw (never standardised) dwell times, where the sigmoid saturates to exactly 1."""
import jax
import jax.numpy as jnp
import numpy as np


def predict(params, x):
    return x @ params["w"] + params["b"]


def bce(params, x, labels):
    logits = predict(params, x)
    p = 1.0 / (1.0 + jnp.exp(-logits))
    return -(labels * jnp.log(p) + (1.0 - labels) * jnp.log(1.0 - p))


def reference_bce(logits, labels):
    logits, labels = np.asarray(logits, np.float64), np.asarray(labels, np.float64)
    return np.logaddexp(0.0, logits) - labels * logits


def check_loss(params, x, labels):
    logits = predict(params, x)
    got = np.asarray(bce(params, x, labels))
    want = reference_bce(logits, labels)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def main():
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.uniform(0.0, 600.0, (8, 3)).astype(np.float32))  # seconds on page, unscaled
    labels = jnp.asarray((rng.uniform(size=8) < 0.3).astype(np.float32))
    params = {"w": jax.random.normal(jax.random.PRNGKey(0), (3,)), "b": jnp.zeros(())}
    check_loss(params, x, labels)
    print("loss matches the reference")


if __name__ == "__main__":
    main()
