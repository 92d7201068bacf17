import jax, jax.numpy as jnp
g = jax.grad(jnp.linalg.norm)(jnp.zeros(2))
assert jnp.isfinite(g).all(), g
