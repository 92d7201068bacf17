"""Fixtures of the parametrized example suites (inputs of reducer's tests, not tests)."""
import jax
import pytest


@pytest.fixture(autouse=True)
def single_precision():
    jax.config.update("jax_enable_x64", False)
    yield


@pytest.fixture
def key():
    return jax.random.key(0)
