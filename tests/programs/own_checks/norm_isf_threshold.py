import jax, jax.numpy as jnp
from jax.scipy.stats import norm
import numpy as np
loss = lambda w: jnp.sum(w ** 2)
g = jax.grad(loss)(jnp.ones(3))
n_tests = 50000
t = norm.isf(0.001 / n_tests)
np.testing.assert_allclose(t, 5.6, rtol=1e-4)
