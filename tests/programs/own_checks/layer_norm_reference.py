"""A test of a jitted layer norm against a NumPy reference written from the paper: the reference
takes the sample variance (`ddof=1`), JAX's `jnp.var` the population variance, so the two differ by
a factor of sqrt(8/7) and the comparison fails."""
import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def layer_norm(x, scale):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + 1e-5) * scale


def reference(x, scale):
    x = np.asarray(x, np.float64)
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, ddof=1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * scale


x = jax.random.normal(jax.random.PRNGKey(0), (4, 8))
scale = jnp.linspace(0.5, 1.5, 8)
np.testing.assert_allclose(layer_norm(x, scale), reference(x, np.asarray(scale)), rtol=1e-4)
