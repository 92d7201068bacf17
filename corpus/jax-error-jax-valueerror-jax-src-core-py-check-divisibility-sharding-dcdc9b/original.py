# jnp.fft.rfft on an array whose transformed axis is sharded over an Explicit
# mesh axis builds an output type that keeps the sharding on the new length
# n//2+1, which is not divisible by the mesh size -> internal ValueError.
# (jnp.fft.fft on the same array works, and rfft works when n//2+1 happens
# to be divisible by the mesh size.)
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P, AxisType

mesh = jax.make_mesh((4,), ("x",), axis_types=(AxisType.Explicit,))
x_np = np.random.default_rng(0).standard_normal(8).astype(np.float32)
expected = np.fft.rfft(x_np)

with jax.set_mesh(mesh):
    x = jax.device_put(x_np, NamedSharding(mesh, P("x")))
    full = jax.jit(jnp.fft.fft)(x)            # works
    got = jax.jit(jnp.fft.rfft)(x)            # ValueError: ... does not evenly divide the dimension size 5
np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-5)
