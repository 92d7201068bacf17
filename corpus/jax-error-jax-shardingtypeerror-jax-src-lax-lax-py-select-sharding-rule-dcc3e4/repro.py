# Reproducer for: jnp.linalg.cholesky (and qr) raise ShardingTypeError on a batch of matrices sharded over an Explicit mesh on the batch axis: _tril selects with an unsharded mask
# Signature: jax-error: library=jax type=ShardingTypeError raised-in=jax/_src/lax/lax.py:_select_sharding_rule message=select <q> must be scalar or have the same sharding as cases, got <value> entered=jax/_src/numpy/linalg.py:cholesky
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Reduced by reducer from batched_cholesky_qr_explicit_sharding.py: 203 -> 64 tokens in 11 s (324 candidates tested).
import numpy
import jax
with jax.set_mesh(jax.make_mesh((1,), 'x')):
    jax.numpy.linalg.cholesky(jax.device_put(numpy.random.default_rng(0).standard_normal((1, 1, 1)), jax.sharding.PartitionSpec('x')))
