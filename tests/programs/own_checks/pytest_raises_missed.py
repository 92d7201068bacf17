"""A test's own check run as a script: `pytest.raises` sees nothing raised (a NaN JAX's check, turned on,
let through after a `with jax.debug_nans(False):` block)."""
import jax
import jax.numpy as jnp
import pytest

jax.config.update("jax_debug_nans", True)
nll = jax.jit(jnp.log)
nll(1.0)
with jax.debug_nans(False):
    pass
with pytest.raises(FloatingPointError):
    nll(-1.0)
