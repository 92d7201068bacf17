# Reproducer for: jnp.fft.rfft over a sharded axis of an Explicit mesh raises an internal divisibility error: the output keeps the input's sharding though its length is n//2+1
# Signature: jax-error: library=jax type=ValueError raised-in=jax/_src/core.py:_check_divisibility message=Sharding spec (<q>,) implies that array axis N is partitioned N times, but does not evenly divide the dimension size N. Got <value> entered=jax/_src/numpy/fft.py:rfft
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Reduced by reducer from rfft_explicit_sharding.py: 170 -> 71 tokens in 9 s (261 candidates tested).
import numpy
import os
os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=4'
import jax
from jax.sharding import NamedSharding, PartitionSpec as P
jax.numpy.fft.rfft(jax.device_put(numpy.random.default_rng(0).standard_normal(0), NamedSharding(jax.make_mesh((2,), 'x'), P('x'))))
