import jax.numpy as jnp
w = jnp.exp(jnp.array([0.0, -120.0]))
assert jnp.isfinite(-jnp.log(w[1] / w.sum()))
