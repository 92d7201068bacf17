# jnp.polyval fails under jit when x is sharded with an Explicit mesh axis:
# its internal lax.scan carry is created with lax.full_like(x, 0, shape=...),
# which drops x's sharding, so scan rejects the carry type.
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P, AxisType

mesh = jax.make_mesh((4,), ("x",), axis_types=(AxisType.Explicit,))
coeffs = jnp.array([1.0, 2.0, 3.0])
x_np = np.arange(8, dtype=np.float32)
expected = np.polyval(np.asarray(coeffs), x_np)  # elementwise; sharding should not matter

with jax.set_mesh(mesh):
    x = jax.device_put(x_np, NamedSharding(mesh, P("x")))
    got = jax.jit(jnp.polyval)(coeffs, x)   # TypeError: scan carry types differ
np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6)
