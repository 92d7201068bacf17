import numpy as np
import jax.numpy as jnp
frac, _ = jnp.modf(jnp.float32(np.inf))
assert np.isfinite(frac), frac
