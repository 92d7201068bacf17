import jax, jax.numpy as jnp, numpy as np
z, y = jnp.array(18.9), 1.0  # confident logit for a true fraud case
p = jax.nn.sigmoid(z)
ll = -(y * jnp.log(p) + (1 - y) * jnp.log(1 - p))
np.testing.assert_allclose(float(ll), -np.log(1 / (1 + np.exp(-18.9))), rtol=1e-4)
