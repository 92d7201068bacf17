"""A small failing test suite for `pytest --reduce` (tests/test_pytest_plugin.py copies it to a temporary
folder and runs pytest there): one plain failing test, one parametrized test with one failing case,
and one that passes."""
import jax
import jax.numpy as jnp
import pytest


def clip_positive(x):
    scale = jnp.float32(2.0)
    shifted = x * scale - 1.0
    if shifted > 0:  # a Python `if` on a traced value: TracerBoolConversionError under jit
        return shifted
    return jnp.zeros_like(shifted)


def test_clip_under_jit():
    values = jnp.linspace(0.0, 1.0, 4)
    total = jnp.sum(values)
    assert jax.jit(clip_positive)(total) >= 0


@pytest.mark.parametrize("power", [2, -1])
def test_norm_is_finite(power):
    x = jnp.array([0.0, 1.0, 2.0])
    norm = jnp.sum(jnp.abs(x) ** power)
    assert jnp.isfinite(norm), f"norm is {norm}"


def test_passes():
    assert jnp.sum(jnp.ones(3)) == 3
