"""Predict house prices from tabular features with a Flax MLP.

Skewed, strictly-positive features (income, lot size, square footage) are
log-transformed inside the jitted loss before being fed to the network.
"""
import sys
import numpy as np
import jax
import jax.numpy as jnp
import flax.linen as nn
import optax

N_SAMPLES = 256
BATCH = 64
SKEWED = 3          # first SKEWED columns get a log transform


def make_data(seed=42):
    """Synthetic housing table: 3 skewed positive columns + 2 standard ones."""
    rng = np.random.default_rng(seed)
    income = rng.lognormal(10.5, 0.6, N_SAMPLES)
    lot = rng.lognormal(8.0, 0.8, N_SAMPLES)
    sqft = rng.lognormal(7.3, 0.4, N_SAMPLES)
    lot[rng.integers(N_SAMPLES)] = 0.0     # condo record: no lot
    age = rng.uniform(0, 80, N_SAMPLES)
    rooms = rng.integers(1, 8, N_SAMPLES).astype(np.float64)
    X = np.stack([income, lot, sqft, (age - 40) / 25, (rooms - 4) / 2], axis=1)
    y = 0.3 * np.log(income) + 0.5 * np.log(sqft) - 0.002 * age + rng.normal(0, 0.1, N_SAMPLES)
    return X.astype(np.float32), ((y - y.mean()) / y.std()).astype(np.float32)


def preprocess(x):
    """Log-scale skewed columns, keep the others as they are."""
    return jnp.concatenate([jnp.log(x[:, :SKEWED]) - 8.0, x[:, SKEWED:]], axis=1)


class PriceMLP(nn.Module):
    hidden: int = 32

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.hidden)(x))
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(1)(x)[:, 0]


model = PriceMLP()
tx = optax.adam(3e-3)


@jax.jit
def train_step(params, opt_state, xb, yb):
    def loss_fn(p):
        pred = model.apply(p, preprocess(xb))
        return jnp.mean((pred - yb) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def batches(X, y, rng):
    perm = rng.permutation(len(X))
    for i in range(0, len(X), BATCH):
        idx = perm[i:i + BATCH]
        yield X[idx], y[idx]


if __name__ == "__main__":
    X, y = make_data()
    print(f"data: X={X.shape}, y mean={y.mean():.3f} std={y.std():.3f}")
    rng = np.random.default_rng(0)
    params = model.init(jax.random.PRNGKey(0), preprocess(jnp.asarray(X[:2])))
    opt_state = tx.init(params)
    step = 0
    for epoch in range(20):
        for xb, yb in batches(X, y, rng):
            params, opt_state, loss = train_step(params, opt_state, xb, yb)
            step += 1
            if not np.isfinite(loss):
                sys.exit(f"loss became nan at step {step}")
        print(f"epoch {epoch:2d}  step {step:4d}  loss {float(loss):.4f}")
    print("done")
