import jax, jax.numpy as jnp
assert jnp.isfinite(-jnp.log(jax.nn.softmax(jnp.array([0., 200.]))[0]))
