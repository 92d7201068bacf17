import numpy as np
import jax.numpy as jnp

x = np.array([61000, 62000], dtype=np.float16)
expected = np.median(x)  # 61500, representable in float16
got = np.asarray(jnp.median(jnp.asarray(x)))
print("jax:", got, "numpy:", expected)
np.testing.assert_allclose(got, expected)
