import jax.numpy as jnp
from scipy.stats import wrapcauchy
assert jnp.isfinite(wrapcauchy.logpdf(0., .9999))
