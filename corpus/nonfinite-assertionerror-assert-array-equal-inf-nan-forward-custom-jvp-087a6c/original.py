import numpy as np
import scipy.special as ss
import jax.scipy.special as js

# Ei(x) ~ euler_gamma + log|x| near 0, so Ei(0) = -inf from both sides
expected = ss.expi(0.0)
got = np.asarray(js.expi(0.0))
print("jax:", got, "scipy:", expected)
np.testing.assert_array_equal(got, expected)
