# Reproducer for: jax.scipy.stats.gumbel_r.logsf(x) is -inf in float32 once exp(-z) underflows (z > 103), where it is about -z: log1mexp(exp(-z))
# Signature: nonfinite: type=AssertionError check=assert value=-inf in=forward op=log fix=call-in-float64 from=logsf
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from flood_gumbel_fixed_scale.py: 282 -> 28 tokens in 27 s (56 candidates tested).
import jax.numpy
assert jax.numpy.isfinite(jax.scipy.stats.gumbel_r.logsf(20000.0, 0.0, 150.0))
