import jax.numpy as jnp
assert jnp.isfinite(0.0 * jnp.log(1.0 / (1.0 + jnp.exp(200.0))))
