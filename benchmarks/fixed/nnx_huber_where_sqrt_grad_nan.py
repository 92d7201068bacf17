import jax
import jax.numpy as jnp

g = jax.grad(lambda r2: jnp.where(r2 > 0, jnp.sqrt(jnp.where(r2 > 0, r2, 1.0)), 0.0))(0.0)
assert jnp.isfinite(g), f"non-finite gradient: {g}"
