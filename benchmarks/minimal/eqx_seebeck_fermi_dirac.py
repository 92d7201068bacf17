import jax
from jax.scipy.special import spence
assert jax.numpy.isfinite(jax.grad(spence)(1.5))
