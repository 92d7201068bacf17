# jax.scipy.stats.norm.isf(q) is implemented as ppf(1 - q); 1 - q rounds to 1
# for small q, so the upper-tail quantile becomes +inf (float32: q < ~6e-8,
# float64: q < ~1e-16). norm.sf was fixed for the same problem (jax#17199);
# isf(q) = -ppf(q) keeps full precision.
import numpy as np
import jax.numpy as jnp
import scipy.stats as ss
from jax.scipy.stats import norm

q = np.array([1e-3, 1e-6, 1e-8, 1e-12, 1e-20], dtype=np.float32)
got = np.asarray(norm.isf(jnp.asarray(q)))
ref = ss.norm.isf(q.astype(np.float64))          # [3.09, 4.75, 5.61, 7.03, 9.26]
print("jax  :", got)
print("scipy:", ref)
np.testing.assert_allclose(got, ref, rtol=1e-4)
