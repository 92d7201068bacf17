import jax.numpy as jnp
import numpy as np
from scipy.special import logsumexp
logits = jnp.array([[1000.0, 990.0]])
np.testing.assert_allclose(jnp.log(jnp.sum(jnp.exp(logits), axis=-1)), logsumexp(np.asarray(logits, dtype=np.float64), axis=-1), rtol=1e-4)
