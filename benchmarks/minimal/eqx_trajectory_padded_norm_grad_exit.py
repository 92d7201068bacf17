import jax, jax.numpy as jnp
g = jax.grad(jnp.linalg.norm)(jnp.zeros(2))
if not jnp.all(jnp.isfinite(g)):
    raise SystemExit("non-finite gradients")
