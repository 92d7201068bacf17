import jax.numpy as jnp
from jax.scipy.stats import wrapcauchy
assert jnp.isfinite(wrapcauchy.logpdf(0., .9999))
