import numpy as np
import scipy.special
import jax.numpy as jnp
import flax.linen as nn
logits = np.array([0.0, 120.0], np.float32)
nll = -nn.log_softmax(logits)[0]
np.testing.assert_allclose(nll, -scipy.special.log_softmax(logits.astype(np.float64))[0], rtol=1e-4)
