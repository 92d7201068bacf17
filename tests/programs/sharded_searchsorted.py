"""`jnp.searchsorted` on a query sharded over an Explicit mesh: JAX's own implementation rebuilds the
sharding against an empty mesh and raises `ValueError: Resource axis ... not found in mesh`."""
import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((4,), ("a",), axis_types=(AxisType.Explicit,))
edges = jnp.linspace(0.0, 1.0, 5)
queries = jax.device_put(np.linspace(-0.1, 1.1, 8).astype(np.float32), NamedSharding(mesh, P("a")))
print(jax.jit(lambda q: jnp.searchsorted(edges, q))(queries))
