# Reproducer for: jax.scipy.stats.chi2.logpdf(0.0, 2.0) is NaN (0 * log(0) inside it) where SciPy gives log(1/2)
# Signature: nonfinite: type=AssertionError check=assert value=nan in=forward op=sub fix=call-by-namesake from=logpdf
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from chi2z.py: 65 -> 26 tokens in 42 s (78 candidates tested).
import jax.numpy
assert jax.numpy.isfinite(jax.scipy.stats.chi2.logpdf(0.0, 2.0))
