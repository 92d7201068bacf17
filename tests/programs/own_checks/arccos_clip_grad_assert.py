"""The angle between a unit vector and itself under `grad`: the dot product rounds to just above 1,
the clip holds it at 1, and `arccos`'s infinite derivative there times the clip's zero is a NaN.
JAX's checks first meet another NaN, a masked `0 / 0` of the loss's weight that never reaches the
gradient: the origin is found among the program's own calls."""
import jax
import jax.numpy as jnp


def angle(u, v):
    return jnp.arccos(jnp.clip(jnp.sum(u * v, axis=-1), -1.0, 1.0))


def loss(u):
    count = jnp.zeros(())
    weight = jnp.where(count > 0, count / count, 1.0)
    return weight * jnp.mean(angle(u, u))


u = jnp.array([[0.6, 0.8, 0.0], [0.0, 0.6, 0.8]]) * 1.0000001
g = jax.grad(loss)(u)
assert jnp.isfinite(g).all(), g
