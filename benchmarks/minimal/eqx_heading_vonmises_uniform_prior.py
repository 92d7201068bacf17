import jax
from jax.scipy.stats import vonmises
p = vonmises.logpdf(0.0, 0.0)  # true: the uniform density's log, -log(2 pi) = -1.8379 (SciPy's)
assert jax.numpy.isfinite(p), p
