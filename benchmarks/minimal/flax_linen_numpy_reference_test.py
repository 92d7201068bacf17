import jax
import numpy as np
from scipy.special import erf
np.testing.assert_allclose(jax.nn.gelu(1.0), 0.5 * (1 + erf(0.5 ** 0.5)), rtol=1e-5)
