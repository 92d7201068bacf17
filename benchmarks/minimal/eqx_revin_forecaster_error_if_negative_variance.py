import equinox as eqx
import jax.numpy as jnp


@eqx.filter_jit
def revin_normalize(x):
    mean = jnp.mean(x)
    var = jnp.mean(x * x) - mean * mean    # one-pass variance: -718 in float32 (true 0.67)
    z = (x - mean) / jnp.sqrt(var + 1e-5)  # sqrt(negative) -> nan
    return eqx.error_if(z, jnp.any(~jnp.isfinite(z)),
                        "Forecaster produced a non-finite prediction")


revin_normalize(101325.0 + jnp.arange(3.0))  # pressure readings in Pa
