import numpy as np, scipy.special, jax
np.testing.assert_allclose(jax.scipy.special.bessel_jn(1.0, v=0)[0], scipy.special.j0(1.0))
