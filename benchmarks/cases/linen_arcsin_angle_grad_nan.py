"""Origin: NaN in grad of acos via jnp.arccos (a clip holds the cosine at 1, where arccos' derivative is infinite)
Fix: clip to [-1 + eps, 1 - eps] before arccos, or use arctan2 of the cross and dot products.

Surface-normal regressor (Flax linen) with a view-consistency angle loss.

The network predicts a unit normal for each point.  Besides the supervised
angle to the ground-truth normal we penalise the angle between predictions for
the original and a randomly sign-flipped copy of the point features (the flip
is a no-op for some samples, which is fine: the angle is then just zero).
"""
import jax
import jax.numpy as jnp
import optax
import flax.linen as nn

FEAT = 8


class NormalHead(nn.Module):
    hidden: int = 32

    @nn.compact
    def __call__(self, x):
        h = nn.tanh(nn.Dense(self.hidden)(x))
        h = nn.tanh(nn.Dense(self.hidden)(h))
        v = nn.Dense(3)(h)
        return v / jnp.linalg.norm(v, axis=-1, keepdims=True)


def angle(u, v):
    dot = jnp.sum(u * v, axis=-1)
    return jnp.arccos(jnp.clip(dot, -1.0, 1.0))


def make_batch(key, batch_size=32):
    kx, kn, kf = jax.random.split(key, 3)
    x = jax.random.normal(kx, (batch_size, FEAT))
    n = jax.random.normal(kn, (batch_size, 3))
    n = n / jnp.linalg.norm(n, axis=-1, keepdims=True)
    # augmentation: flip feature signs with prob 0.5 per sample (else identity)
    flip = jax.random.bernoulli(kf, 0.5, (batch_size, 1))
    x_aug = jnp.where(flip, -x, x)
    return x, x_aug, n


def create_train_state(key):
    model = NormalHead()
    params = model.init(key, jnp.zeros((1, FEAT)))["params"]
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))
    return model, params, tx, tx.init(params)


def make_train_step(model, tx):
    @jax.jit
    def train_step(params, opt_state, x, x_aug, n):
        def loss_fn(p):
            pred = model.apply({"params": p}, x)
            pred_aug = model.apply({"params": p}, x_aug)
            sup = jnp.mean(angle(pred, n))
            consistency = jnp.mean(angle(pred, pred_aug))
            return sup + 0.1 * consistency

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss, grads

    return train_step


def main():
    key = jax.random.PRNGKey(0)
    init_key, data_key = jax.random.split(key)
    model, params, tx, opt_state = create_train_state(init_key)
    train_step = make_train_step(model, tx)
    for step in range(3):
        data_key, sub = jax.random.split(data_key)
        x, x_aug, n = make_batch(sub)
        params, opt_state, loss, grads = train_step(params, opt_state, x, x_aug, n)
        print(f"step {step}: loss={float(loss):.5f}")
        for i, g in enumerate(jax.tree_util.tree_leaves(grads)):
            assert jnp.all(jnp.isfinite(g)), f"non-finite gradient in leaf {i} at step {step}"
    print("ok")


if __name__ == "__main__":
    main()
