import sys, jax, jax.numpy as jnp
def norm(x):
    mu = x.mean()
    return jnp.sum((x - mu) / (jnp.sqrt(jnp.mean((x - mu) ** 2)) + 1e-5))
g = jax.grad(norm)(jnp.zeros(4))
if not jnp.all(jnp.isfinite(g)): sys.exit(f"non-finite gradients: {g}")
