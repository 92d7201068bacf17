# Reproducer for: jax.scipy.special.rel_entr (and kl_div) is NaN for finite arguments above about 6e36 (x log x - x log y overflows to inf - inf); SciPy gives the value
# Signature: nonfinite: type=AssertionError check=assert_allclose value=nan in=forward op=mul fix=float64 from=mul
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from rel_entr_overflow.py: 71 -> 40 tokens in 84 s (95 candidates tested).
import numpy
import scipy.special as ss
import jax.scipy.special as js
numpy.testing.assert_allclose(js.rel_entr(1e+38, 1e+38), ss.rel_entr(0.0, 0.0))
