# Reproducer for: jnp.searchsorted's default method fails on a query sharded over an Explicit mesh: its internal vmap rebuilds the sharding against an empty mesh
# Signature: jax-error: library=jax type=ValueError raised-in=jax/_src/named_sharding.py:_check_mesh_resource_axis message=Resource axis: a of P(<q>,) is not found <value> entered=jax/_src/numpy/lax_numpy.py:searchsorted
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Reduced by reducer from searchsorted_explicit_sharding.py: 194 -> 61 tokens in 16 s (225 candidates tested).
import jax
from jax.sharding import NamedSharding, PartitionSpec as P
jax.numpy.searchsorted(jax.numpy.ones(1), jax.device_put(jax.numpy.ones(0), NamedSharding(jax.make_mesh((1,), 'a'), P('a'))))
