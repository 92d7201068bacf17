import jax, jax.numpy as jnp
g = jax.grad(jnp.linalg.norm)(jnp.zeros(2))
assert jnp.all(jnp.isfinite(g)), "non-finite gradients"
