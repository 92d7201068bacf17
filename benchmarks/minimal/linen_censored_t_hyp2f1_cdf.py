import jax.numpy as jnp
from jax.scipy.special import hyp2f1
v = hyp2f1(.5, 2., 1.5, -3.)  # true value 0.4273
assert jnp.isfinite(v), v
