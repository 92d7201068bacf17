"""Contrastive sentence embeddings with Flax NNX: mean-pooled token embeddings, L2-normalised,
InfoNCE against a paired view. Batches are padded to a fixed number of sentences.

(Written for the benchmark by a helper who had not read the reducer.) A padding sentence's
embedding is a zero row, so `z / norm(z)` is 0/0: the loss is NaN at the first step. The norm's
gradient at zero is NaN too, so a fix of the division alone makes the loop fail a step later."""
import flax.nnx as nnx
import jax
import jax.numpy as jnp
import numpy as np
import optax

VOCAB, DIM, MAXLEN, BATCH = 500, 64, 12, 16


class Encoder(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(VOCAB, DIM, rngs=rngs)
        self.proj = nnx.Linear(DIM, DIM, rngs=rngs)

    def __call__(self, tokens, mask):
        h = self.embed(tokens) * mask[..., None]
        pooled = h.sum(1) / jnp.maximum(mask.sum(1, keepdims=True), 1.0)
        z = self.proj(pooled) * (mask.sum(1, keepdims=True) > 0)
        return z / jax.vmap(jnp.linalg.norm)(z)[:, None]


def info_nce(model, a_tok, a_mask, b_tok, b_mask, temperature=0.1):
    za, zb = model(a_tok, a_mask), model(b_tok, b_mask)
    logits = za @ zb.T / temperature
    return optax.softmax_cross_entropy_with_integer_labels(logits, jnp.arange(logits.shape[0])).mean()


def make_batch(rng, n_real):
    tokens = rng.integers(1, VOCAB, (BATCH, MAXLEN))
    lengths = rng.integers(3, MAXLEN, BATCH)
    mask = (np.arange(MAXLEN)[None, :] < lengths[:, None]).astype(np.float32)
    mask[n_real:] = 0.0  # padding sentences
    return jnp.asarray(tokens), jnp.asarray(mask)


@nnx.jit
def train_step(model, optimizer, a, am, b, bm):
    loss, grads = nnx.value_and_grad(info_nce)(model, a, am, b, bm)
    optimizer.update(model, grads)
    return loss


rng = np.random.default_rng(0)
model = Encoder(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)
for step in range(50):
    a, am = make_batch(rng, 14)
    b, bm = a, am * (rng.uniform(size=am.shape) > 0.1)
    loss = train_step(model, optimizer, a, am, b, bm)
    assert jnp.isfinite(loss), f"step {step}: loss {loss}"
print("trained", float(loss))
