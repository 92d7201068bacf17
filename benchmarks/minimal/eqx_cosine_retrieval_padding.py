import numpy as np
import jax.numpy as jnp
v = jnp.zeros((1, 3), jnp.float32)
qn = v / jnp.linalg.norm(v, axis=-1, keepdims=True)
assert np.isfinite(np.asarray(qn)).all(), qn
