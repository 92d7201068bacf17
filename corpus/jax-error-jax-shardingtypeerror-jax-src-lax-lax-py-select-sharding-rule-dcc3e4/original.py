# Batched jnp.linalg.cholesky / jnp.linalg.qr fail when the *batch* dimension is
# sharded over an Explicit mesh axis. The primitives' sharding rules accept batch
# sharding (eigh, svd, lu, det, solve all work), but lax.linalg._tril/_triu
# select with an unsharded mask and the select sharding rule rejects it.
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P, AxisType

mesh = jax.make_mesh((4,), ("x",), axis_types=(AxisType.Explicit,))
a_np = np.random.default_rng(0).standard_normal((8, 3, 3)).astype(np.float32)
spd_np = a_np @ a_np.transpose(0, 2, 1) + 3 * np.eye(3, dtype=np.float32)
expected = np.linalg.cholesky(spd_np)

with jax.set_mesh(mesh):
    spd = jax.device_put(spd_np, NamedSharding(mesh, P("x")))   # shard batch dim only
    jax.jit(jnp.linalg.eigh)(spd)                                # works
    got = jax.jit(jnp.linalg.cholesky)(spd)                      # ShardingTypeError from _tril
np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-5)
