# Reproducer for: jax.scipy.stats.expon.logcdf(1e-9) is -inf in float32: log1p(-exp(-x)) with exp(-x) rounded to 1; SciPy gives log(1e-9) = -20.7
# Signature: nonfinite: type=AssertionError check=assert value=+inf in=forward op=log1p fix=call-in-float64 from=logcdf
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from linen_detector_expon_logcdf_censored.py: 541 -> 25 tokens in 66 s (46 candidates tested).
import jax.numpy
assert jax.numpy.isfinite(-jax.scipy.stats.expon.logcdf(9.999999717180685e-10))
