import jax.numpy as jnp
loss = jnp.log1p(jnp.exp(1000.0))
assert jnp.isfinite(loss), f"non-finite loss: {loss}"
