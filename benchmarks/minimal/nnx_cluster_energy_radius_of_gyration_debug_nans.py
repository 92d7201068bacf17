import jax, jax.numpy as jnp
jax.config.update("jax_debug_nans", True)
r = jnp.array([7001.0, 7002.0])  # two atoms far from the origin; true Rg^2 = 0.25
jnp.sqrt(jnp.mean(r**2) - jnp.mean(r)**2)  # float32 cancellation gives -4.0 -> sqrt -> nan
