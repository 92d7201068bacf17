import jax
import jax.numpy as jnp
import numpy as np


def binary_cross_entropy(z, y):
    p = jax.nn.sigmoid(z)  # sigmoid(28.) == 1.0 exactly in float32
    return -(y * jnp.log(p) + (1.0 - y) * jnp.log(1.0 - p))  # log(0); grad 0 * inf = nan


z, y = 28.0, 0.0  # saturated logit from unscaled features, label 0
reference = 1.0 / (1.0 + np.exp(-np.float64(z))) - y  # closed form dL/dz in float64
np.testing.assert_allclose(jax.grad(binary_cross_entropy)(z, y), reference, rtol=1e-4, atol=1e-5)
