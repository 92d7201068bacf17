"""Equinox regressor on sensor readings, standardised inside the model; trained with Optax."""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax


class Standardize(eqx.Module):
    def __call__(self, x):
        mean = jnp.mean(x, axis=0)
        var = jnp.mean(x ** 2, axis=0) - mean ** 2   # one-pass variance
        return (x - mean) / jnp.sqrt(var + 1e-12)


class Regressor(eqx.Module):
    norm: Standardize
    mlp: eqx.nn.MLP

    def __init__(self, key):
        self.norm = Standardize()
        self.mlp = eqx.nn.MLP(3, 1, width_size=16, depth=2, key=key)

    def __call__(self, x):
        return jax.vmap(self.mlp)(self.norm(x))[:, 0]


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


rng = np.random.default_rng(4)
x = np.c_[rng.normal(size=256), rng.normal(size=256), np.full(256, 1013.25)].astype(np.float32)  # pressure sensor stuck
x[:, 2] += np.random.default_rng(0).normal(size=256).astype(np.float32) * 1e-3  # its noise
y = (x[:, 0] - 0.5 * x[:, 1]).astype(np.float32)
x, y = jnp.asarray(x), jnp.asarray(y)
model = Regressor(jax.random.PRNGKey(0))
opt = optax.adam(1e-3)
state = opt.init(eqx.filter(model, eqx.is_array))


@eqx.filter_jit
def step(model, state):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, y)
    updates, state = opt.update(grads, state)
    return eqx.apply_updates(model, updates), state, loss


for i in range(20):
    model, state, loss = step(model, state)
    assert jnp.isfinite(loss), f"loss became {loss} at step {i}"
print("trained", float(loss))
