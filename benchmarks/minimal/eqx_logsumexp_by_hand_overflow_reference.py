import jax.numpy as jnp
import numpy as np

x = np.array([100.0, 0.0])
np.testing.assert_allclose(jnp.log(jnp.sum(jnp.exp(jnp.asarray(x)))), np.logaddexp.reduce(x), rtol=1e-4)
