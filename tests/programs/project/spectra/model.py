"""The model: weights on the log-power spectrum."""
import jax.numpy as jnp

from spectra import ops


class SpectralModel:
    def __init__(self, n, floor=0.0):
        self.n = n
        self.floor = floor

    def features(self, signal):
        power = ops.log_power(signal, self.floor)
        return power - jnp.mean(power)  # centred: -inf - -inf is NaN

    def loss(self, weights, signal):
        return jnp.sum(weights * self.features(signal))
