import jax.numpy as jnp
from jax.scipy.stats import gamma
assert jnp.isfinite(gamma.logsf(365., 1.))
