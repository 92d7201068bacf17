import numpy as np, jax.numpy as jnp
np.testing.assert_allclose(jnp.log(jnp.cosh(jnp.float32(100))), np.logaddexp(100, -100) - np.log(2), rtol=1e-4)
