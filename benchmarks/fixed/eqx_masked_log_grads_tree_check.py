import jax
import jax.numpy as jnp
assert jnp.isfinite(jax.grad(lambda x: jnp.where(False, jnp.log(jnp.where(False, x, 1.0)), 0.0))(0.0))
