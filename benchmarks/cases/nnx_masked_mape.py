"""Demand forecasting with Flax NNX on padded store time series.

Each store has a variable-length history; sequences are zero-padded to a common
length and a boolean mask marks the real entries.  We train with a masked
relative-error (MAPE-style) loss, so padded positions must not contribute.
"""
import numpy as np
import jax
import jax.numpy as jnp
import optax
from flax import nnx

NUM_STORES = 32
MAX_LEN = 24
NUM_FEATURES = 5


class DemandModel(nnx.Module):
    def __init__(self, in_features, hidden, *, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(in_features, hidden, rngs=rngs)
        self.fc2 = nnx.Linear(hidden, 1, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.fc1(x))
        return nnx.softplus(self.fc2(h)).squeeze(-1)   # demand is positive


def make_padded_data(seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(8, MAX_LEN + 1, size=NUM_STORES)
    feats = rng.normal(size=(NUM_STORES, MAX_LEN, NUM_FEATURES)).astype(np.float32)
    demand = np.exp(1.0 + 0.3 * feats[..., 0]).astype(np.float32)
    mask = np.arange(MAX_LEN)[None, :] < lengths[:, None]
    feats[~mask] = 0.0
    demand[~mask] = 0.0            # padding
    return jnp.asarray(feats), jnp.asarray(demand), jnp.asarray(mask)


def masked_relative_error(pred, target, mask):
    # padded targets are 0, so only evaluate the ratio on real entries
    rel = jnp.where(mask, jnp.abs(pred - target) / target, 0.0)
    return rel.sum() / mask.sum()


@nnx.jit
def train_step(model, optimizer, x, y, mask):
    def loss_fn(model):
        return masked_relative_error(model(x), y, mask)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss, grads


def main():
    x, y, mask = make_padded_data()
    model = DemandModel(NUM_FEATURES, 32, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    for step in range(10):
        loss, grads = train_step(model, optimizer, x, y, mask)
        if step % 5 == 0:
            print(f"step {step}: masked MAPE = {float(loss):.3f}")
        finite = all(bool(jnp.all(jnp.isfinite(g)))
                     for g in jax.tree_util.tree_leaves(grads))
        if not finite:
            raise ValueError("non-finite gradient")
    print("done")


if __name__ == "__main__":
    main()
