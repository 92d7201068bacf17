"""Metric learning with an angular loss (Flax linen, Optax `adam`): an encoder maps two views of
each example to embeddings, and the loss is the angle between them, `arccos` of the cosine
similarity (clipped to [-1, 1] against rounding). Some pairs are the same example twice (the
augmentation left it as it was), so their embeddings are identical, the cosine rounds to 1.0 or
just above it (clipped to 1.0), and the derivative of `arccos` at 1 is infinite. The training loop
checks the gradients."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import optax


class Encoder(nn.Module):
    hidden: int = 32
    dim: int = 8

    @nn.compact
    def __call__(self, x):
        x = nn.gelu(nn.Dense(self.hidden)(x))
        return nn.Dense(self.dim)(x)


def normalise(v):
    return v / jnp.linalg.norm(v, axis=-1, keepdims=True)


def angle(u, v):
    cosine = jnp.sum(normalise(u) * normalise(v), axis=-1)
    return jnp.arccos(jnp.clip(cosine, -1.0, 1.0))


def augment(x, key, keep):
    noise = 0.1 * jax.random.normal(key, x.shape)
    return jnp.where(keep[:, None], x, x + noise)


@jax.jit
def train_step(params, opt_state, x, key):
    keep = jnp.arange(x.shape[0]) % 2 == 0

    def loss_fn(p):
        u = model.apply(p, x)
        v = model.apply(p, augment(x, key, keep))
        return jnp.mean(angle(u, v))

    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss, grads


model = Encoder()
optimizer = optax.adam(1e-3)

if __name__ == "__main__":
    x = jax.random.normal(jax.random.PRNGKey(0), (6, 5))
    params = model.init(jax.random.PRNGKey(1), x)
    opt_state = optimizer.init(params)
    for step in range(3):
        params, opt_state, loss, grads = train_step(params, opt_state, x, jax.random.PRNGKey(step))
        norms = jax.tree_util.tree_map(jnp.linalg.norm, grads)
        assert all(jnp.isfinite(n) for n in jax.tree_util.tree_leaves(norms)), f"step {step}: gradients {norms}"
        print(f"step {step}: loss {float(loss):.4f}")
