"""Logistic regression with Flax linen + Optax; a hand-written log-sigmoid checked against NumPy."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import flax.linen as nn


class Scorer(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(x)[:, 0]


def log_sigmoid(z):
    return jnp.log(1.0 / (1.0 + jnp.exp(-z)))


def loss_fn(params, model, x, y):
    z = model.apply(params, x)
    return -jnp.mean(y * log_sigmoid(z) + (1 - y) * log_sigmoid(-z))


rng = np.random.default_rng(0)
x = jnp.asarray(rng.normal(size=(32, 4)) * 60.0, jnp.float32)  # unscaled features
y = jnp.asarray(rng.integers(0, 2, 32), jnp.float32)
model = Scorer()
params = model.init(jax.random.PRNGKey(0), x)
tx = optax.sgd(1e-6)
opt_state = tx.init(params)
for step in range(3):
    loss, grads = jax.value_and_grad(loss_fn)(params, model, x, y)
    assert jnp.isfinite(loss), f"step {step}: loss {loss}"
    updates, opt_state = tx.update(grads, opt_state)
    params = optax.apply_updates(params, updates)
z = np.asarray(model.apply(params, x), np.float64)
np.testing.assert_allclose(log_sigmoid(jnp.asarray(z, jnp.float32)), -np.logaddexp(0, -z), rtol=1e-4)
print("ok")
