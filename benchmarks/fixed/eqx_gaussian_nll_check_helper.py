import jax
import numpy as np
np.testing.assert_allclose(jax.scipy.stats.norm.logpdf(300.0), -0.5 * (np.log(2 * np.pi) + 300.0 ** 2), rtol=1e-5)
