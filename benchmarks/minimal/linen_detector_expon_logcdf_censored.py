import jax.numpy as jnp
from jax.scipy.stats import expon
assert jnp.isfinite(expon.logcdf(jnp.float32(2e-8)))  # SciPy's: -17.73
