"""Self-supervised contrastive pre-training (SimCLR / NT-Xent) of a small MLP
encoder on synthetic tabular "sensor" data.

The train step is wrapped with jax.experimental.checkify so that any NaN or
division by zero produced inside the jitted step is reported on the host.
"""
import time

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.experimental import checkify

CONFIG = {
    "seed": 0,
    "n_samples": 512,
    "n_features": 24,
    "batch_size": 64,
    "hidden": 128,
    "proj_dim": 32,
    "temperature": 0.01,   # "sharper is better" -- from a hyper-parameter sweep
    "learning_rate": 3e-4,
    "weight_decay": 1e-4,
    "aug_noise": 0.05,
    "aug_drop": 0.1,
    "steps": 30,
    "log_every": 5,
}


# ----------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------
def make_dataset(rng, n, d):
    """Correlated gaussian features, standardised per column."""
    mix = rng.normal(size=(d, d)) / np.sqrt(d)
    x = rng.normal(size=(n, d)) @ mix
    x = (x - x.mean(0)) / x.std(0)
    return x.astype(np.float32)


def augment(key, x, noise, drop):
    k1, k2 = jax.random.split(key)
    keep = jax.random.bernoulli(k1, 1.0 - drop, x.shape)
    jitter = noise * jax.random.normal(k2, x.shape)
    return jnp.where(keep, x, 0.0) + jitter


# ----------------------------------------------------------------------------
# model
# ----------------------------------------------------------------------------
class MLPBlock(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(self.features)(x)
        return nn.gelu(x)


class Encoder(nn.Module):
    hidden: int
    proj_dim: int

    @nn.compact
    def __call__(self, x):
        h = MLPBlock(self.hidden)(x)
        h = MLPBlock(self.hidden)(h)
        # projection head
        z = nn.Dense(self.hidden)(h)
        z = nn.relu(z)
        return nn.Dense(self.proj_dim)(z)


# ----------------------------------------------------------------------------
# loss
# ----------------------------------------------------------------------------
def l2_normalize(z, axis=-1, eps=1e-8):
    return z / (jnp.linalg.norm(z, axis=axis, keepdims=True) + eps)


def cosine_similarity_matrix(a):
    a = l2_normalize(a)
    return a @ a.T


def log_softmax_with_temperature(logits, temperature):
    # log-sum-exp form: exp(1 / 0.01) = exp(100) overflows float32, so never
    # materialise the un-normalised probabilities.
    return jax.nn.log_softmax(logits / temperature, axis=-1)


def nt_xent(z1, z2, temperature):
    n = z1.shape[0]
    z = jnp.concatenate([z1, z2], axis=0)
    sim = cosine_similarity_matrix(z)
    # an example is never its own negative
    sim = jnp.where(jnp.eye(2 * n, dtype=bool), -1.0, sim)
    log_probs = log_softmax_with_temperature(sim, temperature)
    positives = jnp.concatenate([jnp.arange(n, 2 * n), jnp.arange(n)])
    return -jnp.mean(log_probs[jnp.arange(2 * n), positives])


# ----------------------------------------------------------------------------
# training
# ----------------------------------------------------------------------------
def make_train_step(model, tx, cfg):
    def loss_fn(params, x, key):
        k1, k2 = jax.random.split(key)
        v1 = augment(k1, x, cfg["aug_noise"], cfg["aug_drop"])
        v2 = augment(k2, x, cfg["aug_noise"], cfg["aug_drop"])
        z1 = model.apply(params, v1)
        z2 = model.apply(params, v2)
        return nt_xent(z1, z2, cfg["temperature"])

    def train_step(params, opt_state, x, key):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, key)
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return params, opt_state, loss

    checked = checkify.checkify(train_step, errors=checkify.float_checks)
    return jax.jit(checked)


def batches(rng, x, batch_size):
    while True:
        perm = rng.permutation(len(x))
        for i in range(0, len(x) - batch_size + 1, batch_size):
            yield x[perm[i:i + batch_size]]


def main(cfg):
    rng = np.random.default_rng(cfg["seed"])
    data = make_dataset(rng, cfg["n_samples"], cfg["n_features"])
    print(f"dataset: {data.shape}, mean={data.mean():.3f} std={data.std():.3f}")

    key = jax.random.PRNGKey(cfg["seed"])
    key, init_key = jax.random.split(key)
    model = Encoder(cfg["hidden"], cfg["proj_dim"])
    params = model.init(init_key, jnp.zeros((1, cfg["n_features"])))
    n_params = sum(p.size for p in jax.tree_util.tree_leaves(params))
    print(f"encoder parameters: {n_params}")

    tx = optax.adamw(cfg["learning_rate"], weight_decay=cfg["weight_decay"])
    opt_state = tx.init(params)
    train_step = make_train_step(model, tx, cfg)

    it = batches(rng, data, cfg["batch_size"])
    t0 = time.time()
    for step in range(cfg["steps"]):
        key, sk = jax.random.split(key)
        err, (params, opt_state, loss) = train_step(params, opt_state, next(it), sk)
        err.throw()
        if step % cfg["log_every"] == 0:
            print(f"step {step:4d}  nt-xent {float(loss):.4f}  ({time.time() - t0:.1f}s)")
    print(f"done: final loss {float(loss):.4f}")


if __name__ == "__main__":
    main(CONFIG)
