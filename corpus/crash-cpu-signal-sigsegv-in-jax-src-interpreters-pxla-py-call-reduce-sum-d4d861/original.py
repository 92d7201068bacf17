# A rank-7 float32 multiply-and-reduce with a size-1 dimension, under jit: jaxlib 0.10.2 dies with
# SIGSEGV in XLA:CPU's fused kernel; 0.10.1 computes it (reported upstream as jax-ml/jax#40412).
import jax
import jax.numpy as jnp

shape = (3, 1, 2, 2, 8, 8, 8)
u = jax.random.normal(jax.random.PRNGKey(0), shape, dtype=jnp.float32)
v = jax.random.normal(jax.random.PRNGKey(1), shape, dtype=jnp.float32)
print(jax.jit(lambda a, b: jnp.sum(a * b, axis=3))(u, v).block_until_ready().shape)
