# Reproducer for: JAX: checkify of a jitted function under jax_debug_nans lets JAX's internal InternalFloatingPointError escape instead of a FloatingPointError
# Signature: jax-error: library=jax type=InternalFloatingPointError raised-in=jax/_src/dispatch.py:_check_special message=(<q>, <q>)
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1252-x86_64-with-glibc2.36
# Reduced by reducer from checkify_jit_debug_nans.py: 99 -> 37 tokens in 8 s (146 candidates tested).
import jax
from jax.experimental import checkify
jax.config.update('jax_debug_nans', True)
checkify.checkify(jax.jit(jax.numpy.log))(-1.0)
