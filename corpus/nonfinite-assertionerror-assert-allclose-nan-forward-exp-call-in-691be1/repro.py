# Reproducer for: jax.scipy.special.poch(z, m) is NaN once Gamma(z) overflows (z >= 35 in float32): it divides Gamma(z+m) by Gamma(z)
# Signature: nonfinite: type=AssertionError check=assert_allclose value=nan in=grad op=exp fix=float64 from=exp
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from poch_overflow.py: 67 -> 42 tokens in 81 s (84 candidates tested).
import numpy
import scipy.special as ss
import jax.scipy.special as js
numpy.testing.assert_allclose(js.poch(36.0, 1.0), ss.poch(36.0, 1.0), 0.0001)
