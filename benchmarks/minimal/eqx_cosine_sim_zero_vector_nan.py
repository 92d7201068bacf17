import jax.numpy as jnp

a, b = jnp.zeros(4), jnp.ones(4)
sim = a @ b / (jnp.linalg.norm(a) * jnp.linalg.norm(b))
assert jnp.isfinite(sim), f"non-finite cosine similarity: {sim}"
