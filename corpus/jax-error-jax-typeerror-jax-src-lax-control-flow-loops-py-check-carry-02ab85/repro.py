# Reproducer for: jnp.polyval on an input sharded over an Explicit mesh fails: the scan's initial carry (lax.full_like with a shape) drops the input's sharding
# Signature: jax-error: library=jax type=TypeError raised-in=jax/_src/lax/control_flow/loops.py:_check_carry_type message=scan body function carry input and carry output must have equal types, but they differ: entered=jax/_src/numpy/polynomial.py:polyval
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Reduced by reducer from polyval_explicit_sharding.py: 162 -> 58 tokens in 8 s (189 candidates tested).
import numpy
import jax
with jax.set_mesh(jax.make_mesh((1,), 'x')):
    jax.numpy.polyval(jax.numpy.ones(0), jax.device_put(numpy.arange(0), jax.sharding.PartitionSpec('x')))
