import jax.numpy as jnp, numpy as np
np.testing.assert_allclose(jnp.exp(100.), np.exp(100.))
