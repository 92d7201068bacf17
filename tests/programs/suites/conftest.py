"""Fixtures shared by the example suites (inputs of reducer's tests: a failing test given by its node id)."""
import jax
import pytest


@pytest.fixture
def rng():
    return jax.random.key(0)


@pytest.fixture
def batch(rng):
    x = jax.random.normal(rng, (8, 3))
    return x, x.sum(axis=1)
