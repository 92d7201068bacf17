import jax.numpy as jnp
z = jnp.zeros(2)
assert jnp.isfinite(z / jnp.linalg.norm(z)).all()
