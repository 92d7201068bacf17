"""An array size taken from a traced value inside jit: JAX raises ConcretizationTypeError."""
import jax
import jax.numpy as jnp


@jax.jit
def first_n(x, n):
    return jnp.sum(x[jnp.arange(n)])


print(first_n(jnp.arange(5.0), 3))
