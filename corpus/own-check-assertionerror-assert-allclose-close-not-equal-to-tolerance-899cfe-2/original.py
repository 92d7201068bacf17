# jax.scipy.special.hyp2f1 loses accuracy for 0.9 < x < 1 when c-a-b is a
# positive non-integer: it falls back to the plain Taylor series, which is
# capped at 250 terms, so even in float64 the result is off by ~6e-3 (rel.) at x=0.999
# for moderate parameters and moderate results (values ~1.2-1.9).
# Closed form (DLMF 15.4.12 with a=1/4): 2F1(1/4, 3/4; 3/2; sin(z)**2) = 1/cos(z/2)
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import scipy.special as ss
from jax.scipy.special import hyp2f1

x = np.array([0.5, 0.9, 0.95, 0.99, 0.999])
z = np.arcsin(np.sqrt(x))
exact = 1.0 / np.cos(z / 2)
got = np.asarray(hyp2f1(0.25, 0.75, 1.5, x))
print("jax  :", got)
print("exact:", exact)
print("scipy:", ss.hyp2f1(0.25, 0.75, 1.5, x))
np.testing.assert_allclose(got, exact, rtol=1e-10)
