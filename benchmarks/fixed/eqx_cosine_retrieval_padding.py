import numpy as np
import jax.numpy as jnp
v = jnp.zeros((1, 3), jnp.float32)
qn = v / jnp.maximum(jnp.linalg.norm(v, axis=-1, keepdims=True), 1e-12)
assert np.isfinite(np.asarray(qn)).all(), qn
