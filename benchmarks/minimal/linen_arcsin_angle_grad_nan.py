import jax
import jax.numpy as jnp

g = jax.grad(lambda dot: jnp.arccos(jnp.clip(dot, -1.0, 1.0)))(1.5)
assert jnp.isfinite(g), f"non-finite gradient: {g}"
