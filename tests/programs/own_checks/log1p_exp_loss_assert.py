"""A hand-written softplus `log1p(exp(z))` in a loss: pre-activations in the thousands overflow `exp`
in float64 too; `jax.nn.softplus` does not."""
import jax.numpy as jnp

z = jnp.array([2.0, 1500.0])
loss = jnp.mean(jnp.log1p(jnp.exp(z)) - 0.5 * z)
assert jnp.isfinite(loss), f"non-finite loss: {loss}"
