"""Quantile regression with a quantile-Huber loss on a small MLP (flax.nnx + optax).

Batches are padded to a fixed size so the jitted step only compiles once;
padded rows are masked out of the loss.
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

CFG = dict(
    n_train=200,
    batch_size=64,
    hidden=32,
    quantiles=(0.1, 0.5, 0.9),
    kappa=1.0,  # Huber threshold
    lr=3e-3,
    steps=30,
    seed=0,
)


def make_data(key, n):
    kx, kn = jax.random.split(key)
    x = jax.random.uniform(kx, (n, 1), minval=-3.0, maxval=3.0)
    noise = jax.random.normal(kn, (n, 1)) * (0.2 + 0.3 * jnp.abs(x))
    y = jnp.sin(x) + 0.5 * x + noise
    return x, y


class QuantileMLP(nnx.Module):
    def __init__(self, hidden, n_quantiles, rngs: nnx.Rngs):
        self.l1 = nnx.Linear(1, hidden, rngs=rngs)
        self.l2 = nnx.Linear(hidden, hidden, rngs=rngs)
        self.out = nnx.Linear(hidden, n_quantiles, rngs=rngs)

    def __call__(self, x):
        h = nnx.gelu(self.l1(x))
        h = nnx.gelu(self.l2(h))
        return self.out(h)


def quantile_huber(residual, taus, kappa):
    abs_r = jnp.abs(residual)
    huber = jnp.where(abs_r <= kappa, 0.5 * residual ** 2, kappa * (abs_r - 0.5 * kappa))
    weight = jnp.abs(taus - (residual < 0).astype(residual.dtype))
    return weight * huber / kappa


def loss_fn(model, x, y, mask):
    taus = jnp.asarray(CFG["quantiles"])[None, :]
    pred = model(x)
    residual = (y - pred) * mask[:, None]
    per_example = quantile_huber(residual, taus, CFG["kappa"]).sum(-1)
    return (per_example * mask).sum() / mask.sum()


@nnx.jit
def train_step(model, optimizer, x, y, mask):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y, mask)
    optimizer.update(model, grads)
    return loss, grads


def padded_batches(x, y, bs):
    n = x.shape[0]
    for start in range(0, n, bs):
        xb, yb = x[start:start + bs], y[start:start + bs]
        pad = bs - xb.shape[0]
        mask = jnp.concatenate([jnp.ones(xb.shape[0]), jnp.zeros(pad)])
        xb = jnp.pad(xb, ((0, pad), (0, 0)))
        yb = jnp.pad(yb, ((0, pad), (0, 0)))
        yield xb, yb, mask


def main():
    key = jax.random.PRNGKey(CFG["seed"])
    x, y = make_data(key, CFG["n_train"])
    model = QuantileMLP(CFG["hidden"], len(CFG["quantiles"]), rngs=nnx.Rngs(CFG["seed"]))
    optimizer = nnx.Optimizer(model, optax.adam(CFG["lr"]), wrt=nnx.Param)

    losses = []
    for step in range(CFG["steps"]):
        for xb, yb, mask in padded_batches(x, y, CFG["batch_size"]):
            loss, grads = train_step(model, optimizer, xb, yb, mask)
            losses.append(float(loss))
        if step % 10 == 0:
            print(f"epoch {step:3d}  loss {losses[-1]:.4f}")

    print("final loss:", losses[-1])
    grad_leaves = jax.tree_util.tree_leaves(grads)
    assert all(jnp.isfinite(g).all() for g in grad_leaves), "non-finite gradients"
    assert np.isfinite(losses[-1]), "loss diverged"


if __name__ == "__main__":
    main()
