import jax, jax.numpy as jnp
a, p = jnp.array([0.3, 1.7]), jnp.array([0.3 * (1 + 1e-9), 1.7])  # near-duplicate: equal after float32 rounding
g = jax.grad(lambda a: jnp.linalg.norm(a - p))(a)  # norm of an exactly-zero vector: d sqrt(0) -> nan
if not jnp.isfinite(jnp.linalg.norm(g)): raise ValueError(f"non-finite gradient norm: {jnp.linalg.norm(g)}")
