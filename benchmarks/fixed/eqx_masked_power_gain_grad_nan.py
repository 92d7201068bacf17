import jax, jax.numpy as jnp
safe = lambda x: jnp.where(x > 0, x, 1.0)
assert jnp.isfinite(jax.grad(lambda x: jnp.where(x > 0, jnp.power(safe(x), 0.3), 0.0))(0.0))
