"""The program's own LayerNorm takes `jnp.sqrt(var)` of the zero variance of padded rows: its derivative at 0 is
infinite, times a zero cotangent NaN in every gradient; fixed by `jnp.sqrt(var + EPS)`.

Tiny Equinox sequence classifier (mean-pooled token MLP with a hand-written
layer norm) trained with Optax on synthetic variable-length sequences.

Sequences are zero-padded to MAX_LEN; a mask removes the padding from the
pooled representation.  Gradients are checked for finiteness every step.
"""
import sys

import numpy as np
import jax
import jax.numpy as jnp
import equinox as eqx
import optax

SEED = 42
VOCAB = 32
EMBED = 24
HIDDEN = 48
N_CLASSES = 3
MAX_LEN = 12
N_SEQ = 512
BATCH = 32
STEPS = 150
LR = 1e-3
EPS = 1e-5


# --------------------------------------------------------------------------
# synthetic data: class depends on which token range dominates the sequence
# --------------------------------------------------------------------------
def make_dataset(rng):
    lengths = rng.integers(4, MAX_LEN + 1, size=N_SEQ)
    tokens = np.zeros((N_SEQ, MAX_LEN), np.int32)
    labels = np.zeros(N_SEQ, np.int32)
    for i, L in enumerate(lengths):
        c = rng.integers(N_CLASSES)
        lo = 1 + c * (VOCAB - 1) // N_CLASSES
        hi = 1 + (c + 1) * (VOCAB - 1) // N_CLASSES
        main = rng.integers(lo, hi, size=L)
        noise = rng.integers(1, VOCAB, size=L)
        use_noise = rng.random(L) < 0.3
        tokens[i, :L] = np.where(use_noise, noise, main)
        labels[i] = c
    mask = (np.arange(MAX_LEN)[None, :] < lengths[:, None]).astype(np.float32)
    return tokens, mask, labels


# --------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------
class LayerNorm(eqx.Module):
    """Layer norm written out by hand (no eps inside the sqrt)."""
    gamma: jax.Array
    beta: jax.Array

    def __init__(self, dim):
        self.gamma = jnp.ones(dim)
        self.beta = jnp.zeros(dim)

    def __call__(self, x):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
        std = jnp.sqrt(var + EPS)
        return self.gamma * (x - mu) / (std + EPS) + self.beta


class TokenMLP(eqx.Module):
    linear1: eqx.nn.Linear
    linear2: eqx.nn.Linear
    norm: LayerNorm

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.linear1 = eqx.nn.Linear(EMBED, HIDDEN, key=k1)
        self.linear2 = eqx.nn.Linear(HIDDEN, EMBED, key=k2)
        self.norm = LayerNorm(EMBED)

    def __call__(self, h):
        return self.norm(h + self.linear2(jax.nn.relu(self.linear1(h))))


class Classifier(eqx.Module):
    embedding: eqx.nn.Embedding
    block: TokenMLP
    head: eqx.nn.Linear

    def __init__(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.embedding = eqx.nn.Embedding(VOCAB, EMBED, key=k1)
        self.block = TokenMLP(k2)
        self.head = eqx.nn.Linear(EMBED, N_CLASSES, key=k3)

    def __call__(self, tokens, mask):
        # zero out padded positions before the block (padding token id 0)
        h = jax.vmap(self.embedding)(tokens) * mask[:, None]
        h = jax.vmap(self.block.norm)(h)
        h = jax.vmap(self.block)(h)
        pooled = jnp.sum(h * mask[:, None], axis=0) / jnp.sum(mask)
        return self.head(pooled)


# --------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------
def loss_fn(model, tokens, mask, labels):
    logits = jax.vmap(model)(tokens, mask)
    logp = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.take_along_axis(logp, labels[:, None], axis=-1)[:, 0]
    acc = jnp.mean(jnp.argmax(logits, axis=-1) == labels)
    return jnp.mean(nll), acc


@eqx.filter_jit
def train_step(model, opt_state, tokens, mask, labels, optimizer):
    (loss, acc), grads = eqx.filter_value_and_grad(loss_fn, has_aux=True)(
        model, tokens, mask, labels)
    updates, opt_state = optimizer.update(
        grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
    model = eqx.apply_updates(model, updates)
    return model, opt_state, loss, acc, grads


def tree_all_finite(tree):
    leaves = jax.tree_util.tree_leaves(eqx.filter(tree, eqx.is_inexact_array))
    return all(bool(jnp.all(jnp.isfinite(l))) for l in leaves)


def global_norm(tree):
    leaves = jax.tree_util.tree_leaves(eqx.filter(tree, eqx.is_inexact_array))
    return float(jnp.sqrt(sum(jnp.sum(l ** 2) for l in leaves)))


def main():
    rng = np.random.default_rng(SEED)
    tokens, mask, labels = make_dataset(rng)
    print(f"dataset: {tokens.shape[0]} sequences, "
          f"mean length {mask.sum(1).mean():.2f}, classes {np.bincount(labels)}")

    model = Classifier(jax.random.PRNGKey(SEED))
    optimizer = optax.adam(LR)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_inexact_array))

    for step in range(1, STEPS + 1):
        idx = rng.choice(N_SEQ, size=BATCH, replace=False)
        model, opt_state, loss, acc, grads = train_step(
            model, opt_state, jnp.asarray(tokens[idx]), jnp.asarray(mask[idx]),
            jnp.asarray(labels[idx]), optimizer)
        if not np.isfinite(float(loss)):
            sys.exit(f"step {step}: loss is not finite ({float(loss)})")
        if not tree_all_finite(grads):
            sys.exit(f"step {step}: non-finite gradients "
                     f"(loss={float(loss):.4f}, grad norm={global_norm(grads)})")
        if step % 25 == 0:
            print(f"step {step:4d}  loss {float(loss):.4f}  acc {float(acc):.3f}")

    loss, acc = loss_fn(model, jnp.asarray(tokens), jnp.asarray(mask),
                        jnp.asarray(labels))
    print(f"final train loss {float(loss):.4f}  accuracy {float(acc):.3f}")
    assert float(acc) > 0.6, "classifier failed to learn"


if __name__ == "__main__":
    main()
