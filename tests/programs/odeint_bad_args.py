"""odeint given a Python string among its extra arguments: its argument check raises TypeError."""
import jax.numpy as jnp
from jax.experimental.ode import odeint


def decay(y, t, rate, label):
    return -rate * y


ts = jnp.linspace(0.0, 1.0, 5)
print(odeint(decay, jnp.ones(2), ts, 0.5, "decay"))
