import jax
import jax.numpy as jnp
assert jnp.isfinite(jax.grad(lambda x: jnp.linalg.norm(x) ** 2)(jnp.zeros(1))).all()
