import os; os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=4'
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P, AxisType
mesh = jax.make_mesh((4,), ('a',), axis_types=(AxisType.Explicit,))
a = jnp.linspace(0.0, 1.0, 5)                        # sorted, replicated
q = np.linspace(-0.1, 1.1, 8).astype(np.float32)
qs = jax.device_put(q, NamedSharding(mesh, P('a')))  # query sharded over 'a' (8 divisible by 4)
expected = np.searchsorted(np.asarray(a), q)
print('method=compare_all:', jax.jit(lambda x: jnp.searchsorted(a, x, method='compare_all'))(qs))  # works
r = jax.jit(lambda x: jnp.searchsorted(a, x))(qs)    # default method='scan' -> ValueError: Resource axis: a ... not found in mesh: ()
assert np.array_equal(np.asarray(r), expected), (r, expected)
