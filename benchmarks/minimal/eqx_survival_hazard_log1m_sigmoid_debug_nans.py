import jax, jax.numpy as jnp
jax.config.update("jax_debug_nans", True)
z, event = jnp.array(18.0), jnp.array(1.0)  # hazard logit; sigmoid(18) rounds to 1.0 in float32
(1.0 - event) * jnp.log(1.0 - jax.nn.sigmoid(z))  # log(0) = -inf, 0 * -inf = nan
