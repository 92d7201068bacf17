"""A test for a Flax linen transformer feed-forward block (pre-norm, Dense -> GELU -> Dense, with a
residual), trained for a few steps with Optax `adamw`: the jitted block's output is compared with a
NumPy reference implementation written from the paper's formulas, GELU as x * Phi(x) with the exact
erf. Flax's `nn.gelu` defaults to the tanh approximation, which differs by up to ~1e-3: the
`assert_allclose` with rtol=1e-5 fails."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from scipy.special import erf


class FeedForward(nn.Module):
    hidden: int = 32

    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm(epsilon=1e-6, name="norm")(x)
        h = nn.gelu(nn.Dense(self.hidden, name="up")(h))
        return x + nn.Dense(x.shape[-1], name="down")(h)


def numpy_reference(x, params):
    p = jax.tree_util.tree_map(lambda a: np.asarray(a, np.float64), params)
    x = np.asarray(x, np.float64)
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    h = (x - mean) / np.sqrt(var + 1e-6) * p["norm"]["scale"] + p["norm"]["bias"]
    h = h @ p["up"]["kernel"] + p["up"]["bias"]
    h = 0.5 * h * (1.0 + erf(h / np.sqrt(2.0)))
    return x + h @ p["down"]["kernel"] + p["down"]["bias"]


def train(model, params, x, y, steps=3):
    tx = optax.adamw(1e-3, weight_decay=1e-4)
    opt_state = tx.init(params)

    @jax.jit
    def step(params, opt_state):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((model.apply({"params": p}, x) - y) ** 2))(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    for _ in range(steps):
        params, opt_state, loss = step(params, opt_state)
    return params


def test_feedforward_matches_numpy():
    model = FeedForward()
    x = jax.random.normal(jax.random.PRNGKey(0), (8, 16))
    y = jnp.roll(x, 1, axis=-1)
    params = model.init(jax.random.PRNGKey(1), x)["params"]
    params = train(model, params, x, y)
    out = jax.jit(model.apply)({"params": params}, x)
    np.testing.assert_allclose(np.asarray(out), numpy_reference(x, params), rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    test_feedforward_matches_numpy()
    print("ok")
