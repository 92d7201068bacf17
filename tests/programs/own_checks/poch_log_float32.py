"""Log-likelihood of negative-binomial counts: the log of a Pochhammer symbol."""
import jax.numpy as jnp
from jax.scipy.special import poch

r = jnp.float32(20.0)
y = jnp.float32(16.0)
log_rising = jnp.log(poch(r, y))
assert jnp.isfinite(log_rising), log_rising
