import jax
import jax.numpy as jnp
g = jax.grad(lambda z: jnp.where(False, jnp.sqrt(z), 0.0))(0.0)  # sqrt's infinite derivative at 0, masked
if not jnp.isfinite(g):
    raise FloatingPointError(f"loss became {g}")
