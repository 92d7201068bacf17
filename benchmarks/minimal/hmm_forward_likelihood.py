import jax
import jax.numpy as jnp
b = jnp.tile(jnp.array([0.9, 0.01, 0.2]), 40)
a, _ = jax.lax.scan(lambda a, b: (a @ jnp.full((2, 2), 0.5) * b, None), jnp.ones(2), b)
assert jnp.isfinite(jnp.log(a.sum()))
