"""A jitted training step checked by checkify for NaNs, with JAX's own NaN checks switched on too
while debugging: JAX's internal exception escapes instead of a FloatingPointError."""
import jax
import jax.numpy as jnp
from jax.experimental import checkify

jax.config.update("jax_debug_nans", True)


@jax.jit
def step(w, x):
    return jnp.mean(jnp.log(x @ w))


checked = checkify.checkify(step, errors=checkify.float_checks)
err, loss = checked(jnp.ones(3), -jnp.ones((4, 3)))
err.throw()
print(loss)
