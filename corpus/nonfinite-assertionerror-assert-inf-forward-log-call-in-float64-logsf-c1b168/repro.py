# Reproducer for: jax.scipy.stats.gamma.logsf(365, 1) is -inf in float32: it is log(sf), and sf underflows to 0; SciPy gives -365
# Signature: nonfinite: type=AssertionError check=assert value=+inf in=forward op=log fix=call-in-float64 from=logsf
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from waiting_times_gamma_censored.py: 209 -> 27 tokens in 35 s (49 candidates tested).
import jax.numpy
assert jax.numpy.isfinite(-jax.scipy.stats.gamma.logsf(365.0, 1.0))
