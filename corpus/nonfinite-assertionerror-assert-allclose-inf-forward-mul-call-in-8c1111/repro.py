# Reproducer for: jnp.median of float16 values near the float16 maximum is inf: the two middle values are summed in float16
# Signature: nonfinite: type=AssertionError check=assert_allclose value=+inf in=forward op=mul fix=none from=asarray
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from median_float16.py: 74 -> 40 tokens in 71 s (92 candidates tested).
import jax.numpy
import numpy
x = numpy.array(61000, numpy.float16)
numpy.testing.assert_allclose(jax.numpy.median(x), numpy.median(x))
