# Reproducer for: JAX: inside a `with jax.debug_nans(False):` block, jax_debug_infs (on globally) no longer raises on an Inf from a compiled call (the thread's check hook asks only the block's own values)
# Signature: own-check: type=AssertionError check=raise reads=nonfinite message=jax_debug_infs is on, but an Inf got through inside a debug_nans(False) block: <array>
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1252-x86_64-with-glibc2.36
# Reduced by reducer from infs_inside_nans_block.py: 80 -> 71 tokens in 12 s (129 candidates tested).
import jax
jax.config.update('jax_debug_infs', True)
inverse_scale = lambda x: 1.0 / x
inverse_scale(jax.numpy.ones(2))
with jax.debug_nans(False):
    try:
        out = inverse_scale(jax.numpy.zeros(2))
    except FloatingPointError:
        out = None
if out is not None:
    raise AssertionError(f'jax_debug_infs is on, but an Inf got through inside a debug_nans(False) block: {out}')
