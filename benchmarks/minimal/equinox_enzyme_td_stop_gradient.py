import jax
import numpy as np
from enzyme_ad.jax import enzyme_jax_ir
f = lambda x: x * jax.lax.stop_gradient(x)
np.testing.assert_allclose(jax.jit(jax.grad(enzyme_jax_ir()(f)))(1.0), jax.grad(f)(1.0))
