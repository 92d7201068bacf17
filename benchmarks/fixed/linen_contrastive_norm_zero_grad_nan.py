import jax
import jax.numpy as jnp
import flax.linen as nn
import optax
from flax.training import train_state

IN_DIM = 32
EMB_DIM = 16
N_PAIRS = 256
BATCH = 64
MARGIN = 1.0


class Embedder(nn.Module):
    hidden: int = 64
    out: int = EMB_DIM

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(self.hidden)(x)
        x = nn.LayerNorm()(x)
        x = nn.tanh(x)
        x = nn.Dense(self.hidden)(x)
        x = nn.tanh(x)
        return nn.Dense(self.out)(x)


def make_pairs(key):
    k_x, k_noise, k_lbl, k_neg, k_aug = jax.random.split(key, 5)
    anchors = jax.random.normal(k_x, (N_PAIRS, IN_DIM))
    is_pos = jax.random.bernoulli(k_lbl, 0.5, (N_PAIRS,))
    augment = jax.random.bernoulli(k_aug, 0.8, (N_PAIRS,))
    noise = 0.1 * jax.random.normal(k_noise, (N_PAIRS, IN_DIM))
    positives = anchors + jnp.where(augment[:, None], noise, 0.0)
    negatives = jax.random.normal(k_neg, (N_PAIRS, IN_DIM))
    others = jnp.where(is_pos[:, None], positives, negatives)
    return anchors, others, is_pos.astype(jnp.float32)


def contrastive_loss(params, apply_fn, a, b, y):
    ea = apply_fn({"params": params}, a)
    eb = apply_fn({"params": params}, b)
    sq = jnp.sum(jnp.square(ea - eb), axis=-1)
    nonzero = sq > 0.0
    d = jnp.where(nonzero, jnp.sqrt(jnp.where(nonzero, sq, 1.0)), 0.0)
    pos = y * jnp.square(d)
    neg = (1.0 - y) * jnp.square(jax.nn.relu(MARGIN - d))
    return jnp.mean(pos + neg)


@jax.jit
def train_step(state, a, b, y):
    loss, grads = jax.value_and_grad(contrastive_loss)(state.params, state.apply_fn, a, b, y)
    return loss, grads


@jax.jit
def apply_grads(state, grads):
    return state.apply_gradients(grads=grads)


def main():
    key = jax.random.PRNGKey(0)
    k_init, k_data = jax.random.split(key)
    model = Embedder()
    params = model.init(k_init, jnp.zeros((1, IN_DIM)))["params"]
    tx = optax.chain(optax.clip_by_global_norm(5.0), optax.adamw(1e-3))
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=tx)

    anchors, others, labels = make_pairs(k_data)
    perm_key = jax.random.PRNGKey(1)
    for epoch in range(5):
        perm_key, sub = jax.random.split(perm_key)
        perm = jax.random.permutation(sub, N_PAIRS)
        for i in range(0, N_PAIRS, BATCH):
            idx = perm[i:i + BATCH]
            loss, grads = train_step(state, anchors[idx], others[idx], labels[idx])
            assert all(jnp.isfinite(g).all() for g in jax.tree_util.tree_leaves(grads)), \
                f"non-finite gradients in epoch {epoch}, batch {i // BATCH}"
            state = apply_grads(state, grads)
        print(f"epoch {epoch}  loss {float(loss):.4f}")
    print("done")


if __name__ == "__main__":
    main()
