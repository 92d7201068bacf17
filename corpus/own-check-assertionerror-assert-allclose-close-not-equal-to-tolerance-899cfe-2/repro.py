# Reproducer for: jax.scipy.special.hyp2f1 loses accuracy for 0.9 < x < 1 when c - a - b is a positive non-integer: a Taylor series capped at 250 terms (2e-9 relative at x = 0.95 in float64)
# Signature: own-check: type=AssertionError check=assert_allclose reads=close message=Not equal to tolerance rtol=N, atol=N
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Reduced by reducer from hyp2f1_near_one.py: 133 -> 62 tokens in 90 s (158 candidates tested).
import numpy
import jax
jax.config.update('jax_enable_x64', True)
numpy.testing.assert_allclose(jax.scipy.special.hyp2f1(0.25, 0.75, 1.5, 0.95), 1.0 / numpy.cos(numpy.arcsin(numpy.sqrt(0.95)) / 2), rtol=1e-10)
