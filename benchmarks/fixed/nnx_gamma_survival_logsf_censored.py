import jax.numpy as jnp
from scipy.stats import gamma
assert jnp.isfinite(gamma.logsf(365., 1.))
