"""Origin: NaN in grad of sqrt via jnp.linalg.norm (the anchor-positive distance of a triplet whose positive is the anchor itself)
Fix: take the distance as jnp.sqrt(jnp.sum(diff ** 2, axis=-1) + 1e-12) (or optax.safe_norm), or sample positives from the anchor's class without the anchor.

A Flax NNX embedding network for product-image retrieval (precomputed backbone features in, a
unit-norm 32-d embedding out), trained with an `nnx.Optimizer` (Optax `adamw`) on a margin triplet
loss. The online sampler draws each anchor's positive uniformly among the batch members of the same
class, the anchor itself included; in a long-tailed catalogue many classes have one or two members
per batch, so some positives are the anchor, `z[a] - z[p]` is exactly zero and the distance
`jnp.linalg.norm(..., axis=-1)` is 0. The forward loss is finite, but the derivative of the norm's
`sqrt` at 0 is infinite and meets a zero tangent: NaN flows into every parameter gradient and the
training loop's finiteness assertion fires on the first step.
"""
import flax.nnx as nnx
import jax
import jax.numpy as jnp
import numpy as np
import optax

FEATURES, EMB_DIM, N_CLASSES, BATCH = 48, 32, 20, 32


class Embedder(nnx.Module):
    def __init__(self, in_dim, emb_dim, rngs):
        self.fc1 = nnx.Linear(in_dim, 128, rngs=rngs)
        self.norm = nnx.LayerNorm(128, rngs=rngs)
        self.fc2 = nnx.Linear(128, emb_dim, rngs=rngs)

    def __call__(self, x):
        h = nnx.gelu(self.norm(self.fc1(x)))
        z = self.fc2(h)
        return z / jnp.linalg.norm(z, axis=-1, keepdims=True)


def make_catalogue(n, seed=0):
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, N_CLASSES + 1)               # long-tailed: Zipf over classes
    labels = rng.choice(N_CLASSES, n, p=popularity / popularity.sum())
    prototypes = rng.normal(0.0, 1.0, (N_CLASSES, FEATURES))
    x = prototypes[labels] + 1.5 * rng.normal(0.0, 1.0, (n, FEATURES))
    return x.astype(np.float32), labels


def sample_triplets(labels, rng):
    positives = [rng.choice(np.flatnonzero(labels == y)) for y in labels]
    negatives = [rng.choice(np.flatnonzero(labels != y)) for y in labels]
    return np.arange(len(labels)), np.array(positives), np.array(negatives)


def triplet_loss(model, x, anchor, positive, negative, margin=0.5):
    z = model(x)
    d_ap = jnp.linalg.norm(z[anchor] - z[positive], axis=-1)
    d_an = jnp.linalg.norm(z[anchor] - z[negative], axis=-1)
    return jnp.mean(jnp.maximum(d_ap - d_an + margin, 0.0))


@nnx.jit
def train_step(model, optimizer, x, anchor, positive, negative):
    loss, grads = nnx.value_and_grad(triplet_loss)(model, x, anchor, positive, negative)
    optimizer.update(model, grads)
    return loss, grads


def main():
    rng = np.random.default_rng(1)
    x, labels = make_catalogue(1000)
    model = Embedder(FEATURES, EMB_DIM, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(3e-4, weight_decay=1e-4), wrt=nnx.Param)
    for step in range(200):
        idx = rng.choice(len(labels), BATCH, replace=False)
        anchor, positive, negative = sample_triplets(labels[idx], rng)
        loss, grads = train_step(model, optimizer, jnp.asarray(x[idx]), anchor, positive, negative)
        assert all(jnp.isfinite(g).all() for g in jax.tree_util.tree_leaves(grads)), \
            f"step {step}: non-finite gradients (loss {loss:.4f})"
        if step % 50 == 0:
            print(f"step {step}: triplet loss {loss:.4f}")


if __name__ == "__main__":
    main()
