import jax, jax.numpy as jnp
jax.config.update("jax_debug_nans", True)

step = jax.jit(lambda w, y: w - jnp.log(y))
w = step(jnp.zeros(()), 1.0)
with jax.debug_nans(False):
    pass
try:
    w = step(w, -1.0)  # log(-1) -> NaN, must raise FloatingPointError
except FloatingPointError:
    pass
assert jnp.isfinite(w), "parameters are not finite after training; corrupted batch was not skipped"
