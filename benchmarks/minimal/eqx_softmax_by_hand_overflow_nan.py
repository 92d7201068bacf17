import jax.numpy as jnp
import numpy as np
e = jnp.exp(jnp.array([1000.0, 0.0]))
assert np.all(np.isfinite(e / jnp.sum(e, axis=-1, keepdims=True))), "non-finite attention weights"
