"""A training run turns JAX's NaN checks on for the whole program; a helper that evaluates a metric
turns them off for a moment (`with jax.debug_nans(False)`). After that, a jitted step that makes a NaN
no longer raises: the global flag still reads True."""
import jax
import jax.numpy as jnp

jax.config.update("jax_debug_nans", True)


@jax.jit
def log_likelihood(rate):
    return jnp.log(rate)


def quiet_metric(values):
    with jax.debug_nans(False):  # a metric that may be NaN on purpose
        return float(jnp.nanmean(jnp.asarray(values)))


log_likelihood(jnp.ones(3))  # compiled once, on finite values
quiet_metric([1.0, float("nan")])
assert jax.config.jax_debug_nans
try:
    value = log_likelihood(-jnp.ones(3))
except FloatingPointError:
    print("ok: the NaN was caught")
else:
    raise AssertionError(f"jax_debug_nans is on, but a jitted NaN got through: {value}")
