import jax.numpy as jnp
import numpy as np
np.testing.assert_allclose(jnp.logaddexp(100.0, -100.0) - jnp.log(2.0), np.logaddexp(100.0, -100.0) - np.log(2.0))
