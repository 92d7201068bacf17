import jax.numpy as jnp
assert jnp.isfinite(jnp.mean(jnp.arctanh(jnp.array([1.0, -1.0]))))
