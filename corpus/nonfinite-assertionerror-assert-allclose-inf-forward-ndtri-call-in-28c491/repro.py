# Reproducer for: jax.scipy.stats.norm.isf(q) is inf for q below about 6e-8 in float32: it computes ppf(1 - q), and 1 - q rounds to 1
# Signature: nonfinite: type=AssertionError check=assert_allclose value=+inf in=forward op=ndtri fix=none from=isf
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from norm_isf_small_q.py: 109 -> 42 tokens in 107 s (173 candidates tested).
import jax.numpy
import numpy
import scipy.stats as ss
numpy.testing.assert_allclose(jax.scipy.stats.norm.isf(1e-08), ss.norm.isf(1e-08), 0.0001)
