import jax
import jax.numpy as jnp
loss = jax.nn.softplus(1000.0)
assert jnp.isfinite(loss), f"non-finite loss: {loss}"
