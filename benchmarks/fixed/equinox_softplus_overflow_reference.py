import jax.numpy as jnp
import numpy as np
np.testing.assert_allclose(jnp.logaddexp(0, 100.0), np.logaddexp(0, 100.0))
