# jax.scipy.special.expi returns NaN in float16 for ordinary arguments whose
# result is well inside the float16 range (e.g. expi(1) = 1.895).
import numpy as np
import jax.numpy as jnp
import scipy.special as ss
from jax.scipy.special import expi

x = np.array([0.1, 0.5, 1.0, 2.0, 10.0], dtype=np.float16)
got = np.asarray(expi(jnp.asarray(x))).astype(np.float64)
ref = ss.expi(x.astype(np.float64))          # all |ref| < 2500, representable in float16
print("jax float16:", got)
print("scipy f64  :", ref)
np.testing.assert_allclose(got, ref, rtol=1e-2)
