"""Spectral operations."""
import jax.numpy as jnp

EPS = 1e-12


def normalise(x):
    return x / (jnp.linalg.norm(x) + EPS)


def log_power(x, floor):
    return jnp.log(jnp.abs(jnp.fft.rfft(x)) ** 2 + floor)


def unused_window(n):
    return jnp.hanning(n)
