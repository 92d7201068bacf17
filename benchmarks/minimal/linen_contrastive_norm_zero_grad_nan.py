import jax, jax.numpy as jnp
assert jnp.isfinite(jax.grad(jnp.linalg.norm)(jnp.zeros(2))).all()
