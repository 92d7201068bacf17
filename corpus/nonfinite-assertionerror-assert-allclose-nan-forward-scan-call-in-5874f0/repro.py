# Reproducer for: jax.scipy.special.bessel_jn is NaN in float32 for arguments up to about 3: its backward recurrence overflows (float64 gives J_v)
# Signature: nonfinite: type=AssertionError check=assert_allclose value=nan in=forward op=scan fix=call-in-float64 from=bessel_jn
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from bb.py: 405 -> 81 tokens in 192 s (234 candidates tested).
import numpy
import scipy.special
import jax
r = jax.numpy.ones(1)
numpy.testing.assert_allclose((lambda r: jax.scipy.special.bessel_jn(1.5 * r, v=2).T)(r), scipy.special.jv([0, 1, 2], 1.5 * r[None]), rtol=0.0001, atol=1e-05)
