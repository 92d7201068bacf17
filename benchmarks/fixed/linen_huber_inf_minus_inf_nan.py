import jax.numpy as jnp
t = jnp.array([1.0, 0.0])
valid = t > 0
d = jnp.where(valid, -jnp.log(jnp.where(valid, t, 1.0)), 0.0)
d = d - jnp.sum(d) / jnp.sum(valid)
assert jnp.isfinite(jnp.sum(jnp.where(valid, d, 0.0)) / jnp.sum(valid))
