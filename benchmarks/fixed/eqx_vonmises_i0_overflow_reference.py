import jax.numpy as jnp, jax.scipy.special as jss, numpy as np
from scipy.special import i0e
kappa = 100.0
np.testing.assert_allclose(float(jnp.log(jss.i0e(jnp.float32(kappa))) + kappa), np.log(i0e(kappa)) + kappa, rtol=1e-5)
print("ok")
