import jax.numpy as jnp
x = 1013.3 + 1e-3 * jnp.sin(jnp.arange(16.0))
assert jnp.isfinite(jnp.sqrt(jnp.mean(x ** 2) - jnp.mean(x) ** 2))
