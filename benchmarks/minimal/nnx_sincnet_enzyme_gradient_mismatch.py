import jax
import numpy as np
from enzyme_ad.jax import enzyme_jax_ir
f = jax.numpy.sinc
np.testing.assert_allclose(jax.jit(jax.grad(enzyme_jax_ir()(f)))(0.0), jax.grad(f)(0.0))
