import jax.numpy as jnp
from scipy.special import poch
assert jnp.isfinite(poch(20., 16.))
