import numpy as np
import scipy.special as ss
import jax.scipy.special as js

x = np.float32(1e38)  # finite float32; rel_entr(x, x) = x*log(1) = 0
expected = ss.rel_entr(x, x)
got = np.asarray(js.rel_entr(x, x))
print("jax:", got, "scipy:", expected)
np.testing.assert_allclose(got, expected)
