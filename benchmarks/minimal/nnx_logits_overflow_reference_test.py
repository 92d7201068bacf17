import jax.numpy as jnp
import numpy as np
from scipy.special import logsumexp
np.testing.assert_allclose(jnp.log(jnp.sum(jnp.exp(jnp.array([100.0])))), logsumexp([100.0]), rtol=1e-4)
