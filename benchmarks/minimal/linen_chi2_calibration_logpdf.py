import numpy as np, scipy.stats
import jax.scipy.stats as jst
np.testing.assert_allclose(jst.chi2.logpdf(0.0, 2.0), scipy.stats.chi2.logpdf(0.0, 2.0), rtol=1e-3)
