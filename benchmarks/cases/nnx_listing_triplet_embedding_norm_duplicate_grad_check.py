"""Metric learning for marketplace listings (Flax NNX + Optax).

Listings of the same product should embed close together.  Trained with a
triplet margin loss on Euclidean distances.  The scraped catalogue contains
re-uploaded listings whose attributes went through a unit round-trip.
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

SEED = 11
N_PRODUCTS = 60
LISTINGS_PER_PRODUCT = 8
N_ATTRS = 24
BATCH = 128
MARGIN = 0.2


def load_catalogue(seed=SEED):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0.0, 1.0, (N_PRODUCTS, N_ATTRS))
    labels = np.repeat(np.arange(N_PRODUCTS), LISTINGS_PER_PRODUCT)
    feats = centers[labels] + rng.normal(0.0, 0.35, (labels.size, N_ATTRS))
    # ~5% of listings were re-uploaded: attributes converted cm->in->cm and
    # g->oz->g, which perturbs them at the 1e-9 relative level
    dup_src = rng.choice(labels.size, size=24, replace=False)
    dups = feats[dup_src] * (1.0 + 1e-9 * rng.standard_normal((dup_src.size, N_ATTRS)))
    feats = np.concatenate([feats, dups])
    labels = np.concatenate([labels, labels[dup_src]])
    return feats, labels


def sample_triplets(labels, rng):
    by_class = {c: np.flatnonzero(labels == c) for c in np.unique(labels)}
    anchors = rng.permutation(labels.size)
    pos, neg = [], []
    for a in anchors:
        same = by_class[labels[a]]
        pos.append(rng.choice(same[same != a]))
        while True:
            n = rng.integers(labels.size)
            if labels[n] != labels[a]:
                break
        neg.append(n)
    return anchors, np.array(pos), np.array(neg)


class ListingEncoder(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(N_ATTRS, 64, rngs=rngs)
        self.fc2 = nnx.Linear(64, 64, rngs=rngs)
        self.proj = nnx.Linear(64, 16, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.fc1(x))
        h = nnx.relu(self.fc2(h))
        z = self.proj(h)
        return z / jnp.linalg.norm(z, axis=-1, keepdims=True)


def triplet_loss(model, x, a, p, n):
    z = model(x)                      # the catalogue is small: embed it all once
    d_ap = jnp.linalg.norm(z[a] - z[p], axis=-1)
    d_an = jnp.linalg.norm(z[a] - z[n], axis=-1)
    return jnp.mean(jax.nn.relu(d_ap - d_an + MARGIN))


@nnx.jit
def train_step(model, optimizer, x, a, p, n):
    loss, grads = nnx.value_and_grad(triplet_loss)(model, x, a, p, n)
    optimizer.update(model, grads)
    return loss, optax.global_norm(grads)


def main():
    feats, labels = load_catalogue()
    x = jnp.asarray(feats, dtype=jnp.float32)
    rng = np.random.default_rng(SEED)
    model = ListingEncoder(nnx.Rngs(SEED))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-3, weight_decay=1e-4), wrt=nnx.Param)
    print(f"listings={x.shape[0]} products={N_PRODUCTS}")
    step = 0
    for epoch in range(20):
        a, p, n = sample_triplets(labels, rng)
        losses = []
        for i in range(0, a.size - BATCH + 1, BATCH):
            sl = slice(i, i + BATCH)
            loss, gnorm = train_step(model, optimizer, x, a[sl], p[sl], n[sl])
            step += 1
            if not jnp.isfinite(gnorm):
                raise ValueError(f"non-finite gradient norm: {gnorm}")
            losses.append(float(loss))
        print(f"epoch {epoch:2d}  triplet loss {np.mean(losses):.4f}")


if __name__ == "__main__":
    main()
