import numpy as np
import jax.numpy as jnp
z = np.float32(100.0)
np.testing.assert_allclose(jnp.logaddexp(0.0, z) - z, np.logaddexp(0.0, np.float64(z)) - np.float64(z), atol=1e-6)
