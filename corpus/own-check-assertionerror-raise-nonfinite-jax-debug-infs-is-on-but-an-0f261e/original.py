"""A model's inference helper turns JAX's NaN check off for a block (missing values are NaN on purpose)
while the training script keeps `jax_debug_infs` on globally to catch overflows. Inside the block, an
overflow to Inf is no longer caught, though only the NaN check was turned off."""
import jax
import jax.numpy as jnp

jax.config.update("jax_debug_infs", True)


@jax.jit
def inverse_scale(x):
    return 1.0 / x


inverse_scale(jnp.ones(2))  # compiled once, on finite values
with jax.debug_nans(False):  # NaNs are fine here; Infs are still an error
    try:
        out = inverse_scale(jnp.zeros(2))
    except FloatingPointError:
        out = None
if out is not None:
    raise AssertionError(f"jax_debug_infs is on, but an Inf got through inside a debug_nans(False) block: {out}")
