# Reproducer for: jax.scipy.special.gammainc(a, x) is far off for large a close to x (gammainc(1e7, 1e7) = 3521.8, a probability; SciPy: 0.5)
# Signature: own-check: type=AssertionError check=assert_allclose reads=close message=Not equal to tolerance rtol=N, atol=N
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Reduced by reducer from gammainc_large.py: 77 -> 47 tokens in 12 s (85 candidates tested).
import numpy
import scipy.special as ss
import jax.scipy.special as js
a = x = 10000000.0
numpy.testing.assert_allclose(js.gammainc(a, x), ss.gammainc(a, x), 0.001)
