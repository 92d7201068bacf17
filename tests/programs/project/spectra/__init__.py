"""A small local package: spectral features and a model on them."""
from .model import SpectralModel
from .ops import log_power

__all__ = ["SpectralModel", "log_power"]
