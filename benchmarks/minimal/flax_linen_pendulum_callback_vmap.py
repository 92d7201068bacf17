import jax
import numpy as np
jax.vmap(lambda x: jax.pure_callback(np.sin, x, x))(np.ones(2))
