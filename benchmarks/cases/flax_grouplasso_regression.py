"""Sparse regression with a Flax MLP and a group-lasso penalty.

The group lasso (sum of L2 norms of each parameter tensor) encourages whole
layers / bias vectors to shrink to zero.  We train with Adam in a jitted step
and guard against non-finite gradients before applying updates.
"""
import numpy as np
import jax
import jax.numpy as jnp
import flax.linen as nn
import optax

NUM_FEATURES = 8
HIDDEN = 32
BATCH = 64
NUM_STEPS = 5
LASSO_WEIGHT = 1e-3


class MLPRegressor(nn.Module):
    hidden: int = HIDDEN

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(self.hidden)(x)
        x = nn.gelu(x)
        x = nn.Dense(self.hidden)(x)
        x = nn.gelu(x)
        return nn.Dense(1)(x).squeeze(-1)


def make_dataset(seed=0, n=512):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, NUM_FEATURES)).astype(np.float32)
    true_w = np.zeros(NUM_FEATURES, np.float32)
    true_w[:3] = [1.5, -2.0, 0.7]          # only 3 informative features
    y = x @ true_w + 0.1 * rng.normal(size=n).astype(np.float32)
    return jnp.asarray(x), jnp.asarray(y)


def group_lasso(params):
    # one group per parameter tensor: sum_g ||theta_g||_2
    leaves = jax.tree_util.tree_leaves(params)
    return sum(jnp.linalg.norm(p.ravel()) for p in leaves)


model = MLPRegressor()
optimizer = optax.adam(learning_rate=3e-3)


def loss_fn(params, x, y):
    pred = model.apply({"params": params}, x)
    mse = jnp.mean((pred - y) ** 2)
    return mse + LASSO_WEIGHT * group_lasso(params)


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss, grads


def all_finite(tree):
    return all(bool(jnp.all(jnp.isfinite(g))) for g in jax.tree_util.tree_leaves(tree))


def main():
    x_all, y_all = make_dataset()
    params = model.init(jax.random.PRNGKey(42), x_all[:1])["params"]
    opt_state = optimizer.init(params)
    for step in range(NUM_STEPS):
        idx = slice(step * BATCH, (step + 1) * BATCH)
        params, opt_state, loss, grads = train_step(params, opt_state, x_all[idx], y_all[idx])
        print(f"step {step}: loss={float(loss):.4f}")
        assert all_finite(grads), f"non-finite gradients at step {step}"
    print("training finished")


if __name__ == "__main__":
    main()
