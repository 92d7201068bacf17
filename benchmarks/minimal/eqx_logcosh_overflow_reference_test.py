import jax.numpy as jnp
import numpy as np
np.testing.assert_allclose(jnp.log(jnp.cosh(100.0)), np.logaddexp(100.0, -100.0) - np.log(2.0))
