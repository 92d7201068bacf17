import jax.numpy as jnp
loss = jnp.log(jnp.diag(jnp.linalg.cholesky(jnp.ones((2, 2)) + 0.1 * jnp.eye(2)))).sum()
if not jnp.isfinite(loss):
    raise FloatingPointError(f"loss became {loss} at step 0")
