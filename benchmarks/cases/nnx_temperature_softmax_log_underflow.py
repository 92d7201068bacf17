"""Two-tower retrieval model trained with in-batch negatives (Flax NNX + Optax).

A user tower and an item tower map standardised user and item features to
32-d embeddings; the score of a (user, item) pair is their dot product divided
by a temperature. Each user's purchased item is the positive, the other items
in the batch are the negatives (a sampled-softmax / InfoNCE objective).
"""
import flax.nnx as nnx
import jax
import jax.numpy as jnp
import numpy as np
import optax

USER_DIM, ITEM_DIM, EMBED, BATCH = 12, 10, 32, 256
TEMPERATURE = 0.05


class Tower(nnx.Module):
    def __init__(self, in_dim, rngs):
        self.hidden = nnx.Linear(in_dim, 64, rngs=rngs)
        self.out = nnx.Linear(64, EMBED, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.hidden(x)))


class TwoTower(nnx.Module):
    def __init__(self, rngs):
        self.user = Tower(USER_DIM, rngs)
        self.item = Tower(ITEM_DIM, rngs)

    def __call__(self, users, items):
        return self.user(users) @ self.item(items).T / TEMPERATURE


def in_batch_softmax_loss(model, users, items):
    scores = model(users, items)                           # (B, B), positives on the diagonal
    scores = scores - scores.max(axis=1, keepdims=True)    # for numerical stability
    weights = jnp.exp(scores)
    probs = weights / weights.sum(axis=1, keepdims=True)
    return -jnp.mean(jnp.log(jnp.diagonal(probs)))


@nnx.jit
def train_step(model, optimizer, users, items):
    loss, grads = nnx.value_and_grad(in_batch_softmax_loss)(model, users, items)
    optimizer.update(model, grads)
    return loss


def make_interactions(rng, n):
    taste = rng.normal(size=(n, 4))                        # latent user preferences
    users = np.concatenate([taste @ rng.normal(size=(4, 8)), rng.normal(size=(n, 4))], 1)
    item_latent = taste + 0.3 * rng.normal(size=(n, 4))    # bought items match the taste
    items = np.concatenate([item_latent @ rng.normal(size=(4, 6)), rng.normal(size=(n, 4))], 1)
    users = (users - users.mean(0)) / users.std(0)
    items = (items - items.mean(0)) / items.std(0)
    return users.astype(np.float32), items.astype(np.float32)


rng = np.random.default_rng(0)
users, items = make_interactions(rng, 4096)
model = TwoTower(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

for epoch in range(3):
    perm = rng.permutation(len(users))
    for i in range(0, len(users), BATCH):
        idx = perm[i:i + BATCH]
        loss = train_step(model, optimizer, jnp.asarray(users[idx]), jnp.asarray(items[idx]))
        assert jnp.isfinite(loss), f"epoch {epoch}, batch {i // BATCH}: loss {loss}"
    print(f"epoch {epoch}  loss {float(loss):.4f}")

u = model.user(jnp.asarray(users[:512]))
v = model.item(jnp.asarray(items[:512]))
recall = jnp.mean(jnp.argmax(u @ v.T, axis=1) == jnp.arange(512))
print(f"recall@1 over 512 candidates: {float(recall):.3f}")
