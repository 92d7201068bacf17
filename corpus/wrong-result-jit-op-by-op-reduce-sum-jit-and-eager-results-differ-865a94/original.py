"""A real miscompile of jaxlib 0.10.2 on CPU (jax-ml/jax#39103): a vmapped matrix-vector product
followed by a reduction gives another value under `jit` than op by op. The program compares the two
and fails."""
import jax
import jax.numpy as jnp

i = jnp.arange(32_769, dtype=jnp.float32)
points = jnp.stack((i, jnp.zeros_like(i), jnp.zeros_like(i)), axis=1)
rotation = jnp.eye(3, dtype=jnp.float32)


def squared_norms(x):
    return jax.vmap(lambda row: jnp.sum((rotation @ row) ** 2))(x)


eager = squared_norms(points)
compiled = jax.jit(squared_norms)(points)
print("eager:", float(eager[-1]), "jit:", float(compiled[-1]))
assert jnp.allclose(eager, compiled), "jit and eager results differ"
