"""A ticket-priority classifier whose per-example cross-entropy is written by hand from a softmax and
indexed by integer labels; a helper compares the loss the training step uses, called with the model,
with a stable float64 NumPy form, on raw (never standardised) ticket ages in minutes, where `exp`
overflows: some rows come out NaN (Inf over Inf), others +Inf (the log of a probability of 0)."""
import jax
import jax.numpy as jnp
import numpy as np


def predict(params, x):
    return jnp.tanh(x @ params["w1"]) @ params["w2"] * x[:, :1]


def per_example_loss(params, x, labels):
    logits = predict(params, x)
    probs = jnp.exp(logits) / jnp.sum(jnp.exp(logits), axis=-1, keepdims=True)
    return -jnp.log(jnp.take_along_axis(probs, labels[:, None], axis=-1)[:, 0])


def reference_loss(logits, labels):
    logits = np.asarray(logits, np.float64)
    top = logits.max(-1, keepdims=True)
    return top[:, 0] + np.log(np.exp(logits - top).sum(-1)) - logits[np.arange(len(labels)), np.asarray(labels)]


def check_loss(params, x, labels):
    logits = predict(params, x)
    got = np.asarray(per_example_loss(params, x, labels))
    want = reference_loss(logits, labels)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def main():
    rng = np.random.default_rng(6)
    x = jnp.asarray(np.c_[rng.uniform(0, 900, 12), rng.normal(size=(12, 2))], jnp.float32)  # age in minutes
    labels = jnp.asarray(rng.integers(0, 3, 12))
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    params = {"w1": jax.random.normal(k1, (3, 8)), "w2": jax.random.normal(k2, (8, 3))}
    check_loss(params, x, labels)
    print("loss matches the reference")


if __name__ == "__main__":
    main()
