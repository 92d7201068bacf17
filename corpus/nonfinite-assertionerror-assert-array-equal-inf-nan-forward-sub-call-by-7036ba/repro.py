# Reproducer for: jnp.trapezoid without x is NaN where an end value is infinite (dx * (sum(y) - (y[0] + y[-1]) / 2) is inf - inf); NumPy gives inf
# Signature: nonfinite: type=AssertionError check=assert_array_equal value=+inf,nan in=forward op=stage fix=none from=asarray
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from trapezoid_inf.py: 76 -> 48 tokens in 64 s (86 candidates tested).
import numpy
import jax.numpy as jnp
y = numpy.array([numpy.inf])
got = jnp.trapezoid(jnp.asarray(y))
numpy.testing.assert_array_equal(got, numpy.trapezoid(y))
