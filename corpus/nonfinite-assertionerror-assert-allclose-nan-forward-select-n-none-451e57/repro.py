# Reproducer for: jax.scipy.special.expi is NaN for every float16 argument: its series coefficients are cast to float16, where some are inf
# Signature: nonfinite: type=AssertionError check=assert_allclose value=nan in=forward op=select_n fix=none from=asarray
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from expi_float16.py: 112 -> 94 tokens in 104 s (31 candidates tested).
import numpy as np
import jax.numpy as jnp
import scipy.special as ss
from jax.scipy.special import expi
x = np.array([0.1, 0.5, 1.0, 2.0, 10.0], dtype=np.float16)
np.testing.assert_allclose(np.asarray(expi(jnp.asarray(x))).astype(np.float64), ss.expi(x.astype(np.float64)), rtol=0.01)
