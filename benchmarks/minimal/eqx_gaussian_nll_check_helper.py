import jax.numpy as jnp
import numpy as np
np.testing.assert_allclose(jnp.log(jnp.exp(-0.5 * 300.0 ** 2) / jnp.sqrt(2 * jnp.pi)), -0.5 * (np.log(2 * np.pi) + 300.0 ** 2), rtol=1e-5)
