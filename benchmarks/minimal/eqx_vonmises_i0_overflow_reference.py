import jax.numpy as jnp, numpy as np
from scipy.special import i0e
kappa = 100.0
np.testing.assert_allclose(float(jnp.log(jnp.i0(jnp.float32(kappa)))), np.log(i0e(kappa)) + kappa, rtol=1e-5)
