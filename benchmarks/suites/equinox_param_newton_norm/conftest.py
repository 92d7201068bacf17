"""Shared fixtures of the normalisation tests."""
import jax
import jax.numpy as jnp
import pytest


@pytest.fixture
def key():
    return jax.random.key(0)


@pytest.fixture
def data(key):
    x = jax.random.normal(jax.random.fold_in(key, 1), (32, 4))
    y = jnp.sin(x).sum(axis=1, keepdims=True)
    return x, y
