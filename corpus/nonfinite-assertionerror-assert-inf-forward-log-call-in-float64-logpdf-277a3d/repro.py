# Reproducer for: jax.scipy.stats.wrapcauchy.logpdf(0, 0.9999) is +inf in float32: 1 + c^2 - 2c cos(x) cancels to 0; SciPy gives 8.07
# Signature: nonfinite: type=AssertionError check=assert value=-inf in=forward op=log fix=call-in-float64 from=logpdf
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from test_wrapcauchy_heading_logpdf__test_loss_and_grads_finite_at_true_params.py: 475 -> 27 tokens in 52 s (53 candidates tested).
import jax.numpy
assert jax.numpy.isfinite(-jax.scipy.stats.wrapcauchy.logpdf(0.0, 0.9998999834060669))
