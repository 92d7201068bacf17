"""Claims that `jit` and op-by-op results differ, but they agree: the program's word alone is no
evidence of a wrong result."""
import jax
import jax.numpy as jnp

points = jnp.arange(12.0).reshape(4, 3)
compiled = jax.jit(lambda x: jnp.sum(x ** 2, axis=1))(points)
raise SystemExit("jit and eager results differ")
