import jax, jax.numpy as jnp
t, observed = jnp.array(168.0), jnp.array(False)  # late, below-LOQ (masked) sample
g = jax.grad(lambda k: jnp.where(observed, jnp.log(jnp.exp(-k * t)), 0.0))(jnp.array(1.0))  # exp(-168) underflows to 0 in float32
assert jnp.isfinite(g), "gradient has NaN/Inf"
