import jax.numpy as jnp
from jax.scipy.special import poch
assert jnp.isfinite(poch(20., 16.))
