# Reproducer for: JAX: after any `with jax.debug_nans(...)` block (True too), a NaN no longer raises though jax_debug_nans is on globally (the thread's NaN-check hook is left set to None)
# Signature: own-check: type=AssertionError check=raise reads=nonfinite message=jax_debug_nans is on, but a jitted NaN got through: <array>
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1252-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from debug_nans_flag_lost.py: 119 -> 65 tokens in 21 s (124 candidates tested).
import jax
jax.config.update('jax_debug_nans', True)
log_likelihood = jax.numpy.log
log_likelihood(jax.numpy.ones(1))
with jax.debug_nans():
    pass
try:
    value = log_likelihood(-jax.numpy.ones(1))
except FloatingPointError:
    pass
else:
    raise AssertionError(f'jax_debug_nans is on, but a jitted NaN got through: {value}')
