"""Equinox MLP predicting a positive heat-capacity curve from raw furnace sensor data.

Inputs are raw (unnormalised) temperatures in Kelvin plus pressure in kPa.
The output head uses a hand-written softplus so that predictions stay positive.
The test compares the float32 Equinox forward pass against a float64 NumPy
reference implementation of the same network.
"""
import numpy as np
import jax
import jax.numpy as jnp
import equinox as eqx


class HeatCapacityNet(eqx.Module):
    hidden: eqx.nn.Linear
    head: eqx.nn.Linear

    def __init__(self, in_size, width, *, key):
        k1, k2 = jax.random.split(key)
        self.hidden = eqx.nn.Linear(in_size, width, key=k1)
        self.head = eqx.nn.Linear(width, 1, key=k2)

    def __call__(self, x):
        h = jax.nn.relu(self.hidden(x))
        z = self.head(h)[0]
        return jnp.log(1.0 + jnp.exp(z))   # hand-written softplus: output > 0


def numpy_reference(model, x):
    """Same network evaluated in float64 with NumPy."""
    w1 = np.asarray(model.hidden.weight, np.float64)
    b1 = np.asarray(model.hidden.bias, np.float64)
    w2 = np.asarray(model.head.weight, np.float64)
    b2 = np.asarray(model.head.bias, np.float64)
    h = np.maximum(x @ w1.T + b1, 0.0)
    z = (h @ w2.T + b2)[:, 0]
    return np.log(1.0 + np.exp(z))


def make_sensor_batch(seed=0, n=16):
    rng = np.random.default_rng(seed)
    temperature_k = rng.uniform(300.0, 900.0, size=n)   # furnace range
    pressure_kpa = rng.uniform(90.0, 110.0, size=n)
    return np.stack([temperature_k, pressure_kpa], axis=1)


def test_forward_matches_float64_reference():
    model = HeatCapacityNet(in_size=2, width=32, key=jax.random.PRNGKey(3))
    x = make_sensor_batch()
    out = jax.vmap(model)(jnp.asarray(x, jnp.float32))
    ref = numpy_reference(model, x)
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-4,
                               err_msg="float32 forward pass disagrees with reference")


if __name__ == "__main__":
    test_forward_matches_float64_reference()
    print("ok")
