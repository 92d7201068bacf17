import numpy as np
import scipy.special as ss
import jax.scipy.special as js

# poch(z, 1) = Gamma(z+1)/Gamma(z) = z; here z=36 (Gamma(36) overflows float32)
expected = ss.poch(36.0, 1.0)
got = np.asarray(js.poch(36.0, 1.0))
print("jax:", got, "scipy:", expected)
np.testing.assert_allclose(got, expected, rtol=1e-4)
