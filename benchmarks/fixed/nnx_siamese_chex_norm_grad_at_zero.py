"""Metric learning with a contrastive (Hadsell et al. 2006) pair loss.

A small Flax NNX embedding network is trained so that examples of the same
class are close and examples of different classes are at least `margin`
apart.  All pairs in the batch are used; the diagonal (an example paired
with itself) is masked out of the loss.  Gradients are checked with chex
every step before we trust the update.
"""
import time

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

CONFIG = {
    "seed": 7,
    "n_classes": 6,
    "per_class": 60,
    "in_dim": 20,
    "hidden": 64,
    "embed_dim": 8,
    "margin": 1.0,
    "batch_size": 48,
    "lr": 3e-3,
    "steps": 40,
    "log_every": 10,
}


# ----------------------------------------------------------------------------
# data: gaussian clusters in a random low-dim subspace
# ----------------------------------------------------------------------------
def make_clusters(rng, cfg):
    basis = rng.normal(size=(4, cfg["in_dim"]))
    centres = rng.normal(scale=2.0, size=(cfg["n_classes"], 4))
    xs, ys = [], []
    for c in range(cfg["n_classes"]):
        latent = centres[c] + 0.5 * rng.normal(size=(cfg["per_class"], 4))
        xs.append(latent @ basis + 0.1 * rng.normal(size=(cfg["per_class"], cfg["in_dim"])))
        ys.append(np.full(cfg["per_class"], c))
    x = np.concatenate(xs).astype(np.float32)
    y = np.concatenate(ys).astype(np.int32)
    return (x - x.mean(0)) / x.std(0), y


# ----------------------------------------------------------------------------
# model
# ----------------------------------------------------------------------------
class Embedder(nnx.Module):
    def __init__(self, in_dim, hidden, embed_dim, *, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(in_dim, hidden, rngs=rngs)
        self.fc2 = nnx.Linear(hidden, hidden, rngs=rngs)
        self.out = nnx.Linear(hidden, embed_dim, rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.fc1(x))
        x = nnx.relu(self.fc2(x))
        return self.out(x)


# ----------------------------------------------------------------------------
# loss
# ----------------------------------------------------------------------------
def pairwise_distances(z, eps=1e-12):
    # Safe norm: the diagonal has diff == 0, where d/dx sqrt(x) is infinite and
    # jnp.linalg.norm's gradient is 0 * inf = NaN -- even though the diagonal is
    # masked out of the loss afterwards.  Clamp the squared distance instead.
    diff = z[:, None, :] - z[None, :, :]
    sq = jnp.sum(diff * diff, axis=-1)
    return jnp.sqrt(jnp.maximum(sq, eps))


def contrastive_pair_loss(z, labels, margin):
    d = pairwise_distances(z)
    same = labels[:, None] == labels[None, :]
    pos = d ** 2
    neg = jnp.maximum(margin - d, 0.0) ** 2
    per_pair = jnp.where(same, pos, neg)
    off_diag = ~jnp.eye(z.shape[0], dtype=bool)
    per_pair = jnp.where(off_diag, per_pair, 0.0)
    return per_pair.sum() / off_diag.sum()


def loss_fn(model, x, y, margin):
    return contrastive_pair_loss(model(x), y, margin)


@nnx.jit(static_argnums=(4,))
def train_step(model, optimizer, x, y, margin):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y, margin)
    optimizer.update(model, grads)
    return loss, grads


# ----------------------------------------------------------------------------
# evaluation
# ----------------------------------------------------------------------------
def nearest_neighbour_accuracy(model, x, y):
    z = np.asarray(model(jnp.asarray(x)))
    d = ((z[:, None] - z[None]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    return float((y[d.argmin(1)] == y).mean())


def main(cfg):
    rng = np.random.default_rng(cfg["seed"])
    x, y = make_clusters(rng, cfg)
    print(f"data: {x.shape}, classes: {np.bincount(y).tolist()}")

    model = Embedder(cfg["in_dim"], cfg["hidden"], cfg["embed_dim"], rngs=nnx.Rngs(cfg["seed"]))
    optimizer = nnx.Optimizer(model, optax.adam(cfg["lr"]), wrt=nnx.Param)
    print(f"1-NN accuracy before training: {nearest_neighbour_accuracy(model, x, y):.3f}")

    t0 = time.time()
    for step in range(cfg["steps"]):
        idx = rng.choice(len(x), cfg["batch_size"], replace=False)
        loss, grads = train_step(model, optimizer, jnp.asarray(x[idx]), jnp.asarray(y[idx]),
                                 cfg["margin"])
        chex.assert_tree_all_finite(grads)
        if step % cfg["log_every"] == 0:
            print(f"step {step:3d}  loss {float(loss):.4f}  ({time.time() - t0:.1f}s)")

    print(f"1-NN accuracy after training: {nearest_neighbour_accuracy(model, x, y):.3f}")


if __name__ == "__main__":
    main(CONFIG)
