"""A pairwise energy whose gradient is NaN: the norm of a zero displacement (its derivative is inf)
masked by `where` (inf x 0 is nan). The program's own assert catches it."""
import jax
import jax.numpy as jnp


def energy(x):
    d = x[:, None, :] - x[None, :, :]
    r = jnp.linalg.norm(d, axis=-1)
    mask = jnp.eye(x.shape[0]) == 0
    return jnp.sum(jnp.where(mask, 1.0 / jnp.where(mask, r, 1.0) ** 6, 0.0))


x = jnp.arange(6.0).reshape(3, 2)
g = jax.grad(energy)(x)
assert jnp.isfinite(g).all(), f"gradient is {g}"
