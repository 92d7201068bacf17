"""The program's own mistake: a sharding over an axis its mesh does not have. JAX raises the same
`ValueError: Resource axis ... not found in mesh` at the same place as for `sharded_searchsorted`."""
import jax
from jax.sharding import NamedSharding, PartitionSpec as P

NamedSharding(jax.make_mesh((1,), ""), P("a"))
