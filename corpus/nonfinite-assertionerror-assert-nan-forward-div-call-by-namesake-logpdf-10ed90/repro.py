# Reproducer for: jax.scipy.stats.t.logpdf(x, df=inf) is NaN (lgamma(inf) - lgamma(inf)) where SciPy gives the normal log-density
# Signature: nonfinite: type=AssertionError check=assert value=nan in=forward op=div fix=call-by-namesake from=logpdf
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from student_t_gaussian_limit.py: 300 -> 32 tokens in 50 s (54 candidates tested).
import jax.numpy
value = jax.scipy.stats.t.logpdf(0.0, float('inf'))
assert jax.numpy.isfinite(value)
