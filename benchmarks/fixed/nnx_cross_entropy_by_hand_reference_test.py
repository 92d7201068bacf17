import jax
import jax.numpy as jnp
import numpy as np
np.testing.assert_allclose(jnp.exp(jax.nn.log_softmax(jnp.array([100.0]))), 1)
