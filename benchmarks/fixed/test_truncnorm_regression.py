from jax import grad,config
config.update('jax_enable_x64',True)
from jax.scipy.stats.truncnorm import logpdf
assert grad(logpdf,1)(7,6.,8)>0
