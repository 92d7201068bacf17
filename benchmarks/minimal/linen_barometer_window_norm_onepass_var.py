import jax.numpy as jnp
x = jnp.array([101325.3, 101325.7, 101324.9])
var = jnp.mean(x * x, axis=-1) - jnp.mean(x, axis=-1) ** 2
assert jnp.isfinite(jnp.sqrt(var + 1e-5)), "non-finite"
