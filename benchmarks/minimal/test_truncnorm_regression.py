from jax import grad
from jax.scipy.stats.truncnorm import logpdf
assert grad(logpdf,1)(7,6.,8)>0
