import jax
import jax.numpy as jnp
p = jax.nn.sigmoid(jnp.array([-120.0, 20.0]))  # p[0] underflows to 0 in float32
assert jnp.isfinite(jnp.mean(jnp.array([0.0, 1.0]) * jnp.log(p)))  # 0 * log(0)
