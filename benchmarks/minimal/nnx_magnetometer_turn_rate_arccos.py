import jax.numpy as jnp
f = jnp.array([[48.0, 0.0, 48.0], [48.0, 0.0048, 48.0]])  # two field samples 0.1 mrad apart
u = f / jnp.linalg.norm(f, axis=-1, keepdims=True)
if jnp.isnan(jnp.arccos(jnp.sum(u[1] * u[0]))):
    raise ValueError("NaN turn angle")
