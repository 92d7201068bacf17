"""A Poisson rate model in Flax linen: raw features make log-rates in the hundreds, and `exp` of them
overflows float32 against a float64 NumPy reference. The layer's parameters stay float32 when the
program is made float64, so only `exp` evaluated in float64 takes the Inf away."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


class RateModel(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(nn.relu(nn.Dense(8)(x)))[:, 0]


rng = np.random.default_rng(0)
x = jnp.asarray(rng.normal(size=(32, 4)) * 400.0, jnp.float32)
y = jnp.asarray(rng.poisson(3.0, size=32), jnp.float32)
model = RateModel()
params = model.init(jax.random.PRNGKey(5), x)["params"]
log_rate = model.apply({"params": params}, x)
loss = jax.jit(lambda r: jnp.mean(jnp.exp(r) - y * r))(log_rate)
wide = np.asarray(log_rate, np.float64)
np.testing.assert_allclose(loss, np.mean(np.exp(wide) - np.asarray(y, np.float64) * wide), rtol=1e-4)
