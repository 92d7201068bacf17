"""NumPy called on a traced value inside jit: JAX raises TracerArrayConversionError."""
import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def normalise(x):
    return x / np.linalg.norm(x)


print(normalise(jnp.arange(1.0, 4.0)))
