import jax.numpy as jnp
import optax

a, b = jnp.zeros(4), jnp.ones(4)
sim = a @ b / (optax.safe_norm(a, 1e-6) * optax.safe_norm(b, 1e-6))
assert jnp.isfinite(sim), f"non-finite cosine similarity: {sim}"
