import jax.numpy as jnp
from jax.experimental import checkify


def softmax_with_temperature(sim, temperature):
    e = jnp.exp(sim / temperature)  # exp(0.95 / 0.01) = exp(95) -> inf in float32
    return e / jnp.sum(e)           # inf / inf -> nan


err, _ = checkify.checkify(softmax_with_temperature, errors=checkify.float_checks)(
    jnp.array([0.95]), 0.01)
err.throw()
