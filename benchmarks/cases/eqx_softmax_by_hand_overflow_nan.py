"""Attention-pooling classifier for smart-meter load profiles (Equinox + Optax).

Each household is a day of half-hourly readings: active power [W], mains
voltage [V] and hour of day. One self-attention layer mixes the time steps,
the result is mean-pooled and a linear layer predicts the tariff class.
"""
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

SEQ_LEN = 48
N_FEATURES = 3
D_MODEL = 16
N_CLASSES = 3


def softmax(scores):
    e = jnp.exp(scores)
    return e / jnp.sum(e, axis=-1, keepdims=True)


class LoadProfileAttention(eqx.Module):
    embed: eqx.nn.Linear
    query_proj: eqx.nn.Linear
    key_proj: eqx.nn.Linear
    value_proj: eqx.nn.Linear
    head: eqx.nn.Linear

    def __init__(self, n_features, d_model, n_classes, *, key):
        k1, k2, k3, k4, k5 = jax.random.split(key, 5)
        self.embed = eqx.nn.Linear(n_features, d_model, key=k1)
        self.query_proj = eqx.nn.Linear(d_model, d_model, key=k2)
        self.key_proj = eqx.nn.Linear(d_model, d_model, key=k3)
        self.value_proj = eqx.nn.Linear(d_model, d_model, key=k4)
        self.head = eqx.nn.Linear(d_model, n_classes, key=k5)

    def attention_weights(self, x):
        # x: (SEQ_LEN, n_features) for a single household
        h = jax.vmap(self.embed)(x)
        q = jax.vmap(self.query_proj)(h)
        k = jax.vmap(self.key_proj)(h)
        scores = q @ k.T / math.sqrt(D_MODEL)   # (SEQ_LEN, SEQ_LEN)
        return softmax(scores), h

    def __call__(self, x):
        w, h = self.attention_weights(x)
        v = jax.vmap(self.value_proj)(h)
        mixed = h + w @ v
        pooled = jnp.mean(jax.nn.gelu(mixed), axis=0)
        return self.head(pooled)


def make_load_profiles(n, seed=0):
    rng = np.random.default_rng(seed)
    hours = np.arange(SEQ_LEN) / 2.0
    labels = rng.integers(0, N_CLASSES, size=n)
    base = np.array([300.0, 600.0, 1200.0])[labels][:, None]
    evening_peak = np.exp(-0.5 * ((hours - 19.0) / 2.0) ** 2)[None, :]
    power = base * (1.0 + 2.0 * evening_peak) + rng.normal(0.0, 80.0, size=(n, SEQ_LEN))
    voltage = rng.normal(230.0, 3.0, size=(n, SEQ_LEN))
    hour = np.broadcast_to(hours, (n, SEQ_LEN))
    x = np.stack([power, voltage, hour], axis=-1)
    return x.astype(np.float32), labels.astype(np.int32)


def loss_fn(model, x, y):
    logits = jax.vmap(model)(x)
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, y))


@eqx.filter_jit
def batched_attention(model, x):
    weights, _ = jax.vmap(model.attention_weights)(x)
    return weights


@eqx.filter_jit
def train_step(model, opt_state, x, y, optimizer):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    model = eqx.apply_updates(model, updates)
    return model, opt_state, loss


def test_attention_weights_are_a_distribution():
    model = LoadProfileAttention(N_FEATURES, D_MODEL, N_CLASSES, key=jax.random.PRNGKey(2))
    x, _ = make_load_profiles(64, seed=1)
    weights = np.asarray(batched_attention(model, jnp.asarray(x)))
    assert np.all(np.isfinite(weights)), (
        f"{np.sum(~np.isfinite(weights))} non-finite attention weights"
    )
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)


def test_training_step_runs():
    model = LoadProfileAttention(N_FEATURES, D_MODEL, N_CLASSES, key=jax.random.PRNGKey(2))
    optimizer = optax.adam(1e-3)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))
    x, y = make_load_profiles(256, seed=2)
    x, y = jnp.asarray(x), jnp.asarray(y)
    losses = []
    for _ in range(20):
        model, opt_state, loss = train_step(model, opt_state, x, y, optimizer)
        losses.append(float(loss))
    assert np.isfinite(losses[-1]), f"loss became {losses[-1]}"


if __name__ == "__main__":
    test_attention_weights_are_a_distribution()
    test_training_step_runs()
    print("all tests passed")
