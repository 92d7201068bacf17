import numpy as np, jax, jax.numpy as jnp
x = jnp.abs(jnp.float32(100))
np.testing.assert_allclose(x + jax.nn.softplus(-2.0 * x) - jnp.log(2.0), np.logaddexp(100, -100) - np.log(2), rtol=1e-4)
