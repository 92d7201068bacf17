import jax
from jax.scipy.stats import gamma
g = jax.grad(lambda s: gamma.logpdf(0., 1., scale=s))(2.)  # true: -1/s = -0.5
assert jax.numpy.isfinite(g), g
