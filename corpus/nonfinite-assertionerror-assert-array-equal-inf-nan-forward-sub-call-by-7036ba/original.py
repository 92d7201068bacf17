import numpy as np
import jax.numpy as jnp

y = np.array([np.inf, 1.0], dtype=np.float32)
expected = np.trapezoid(y)  # (inf + 1) / 2 = inf
got = np.asarray(jnp.trapezoid(jnp.asarray(y)))
print("jax:", got, "numpy:", expected)
np.testing.assert_array_equal(got, expected)
