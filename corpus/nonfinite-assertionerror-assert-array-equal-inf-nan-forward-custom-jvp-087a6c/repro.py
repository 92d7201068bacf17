# Reproducer for: jax.scipy.special.expi(0.0) is NaN; Ei(x) tends to -inf from both sides and SciPy gives -inf
# Signature: nonfinite: type=AssertionError check=assert_array_equal value=-inf,nan in=forward op=custom_jvp_call fix=none from=expi
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from expi_zero.py: 59 -> 36 tokens in 61 s (50 candidates tested).
import numpy
import scipy.special as ss
import jax.scipy.special as js
numpy.testing.assert_array_equal(js.expi(0.0), ss.expi(0.0))
