import jax, jax.numpy as jnp, pytest
jax.config.update("jax_debug_nans", True)
nll = jax.jit(jnp.log)


@jax.debug_nans(False)
def test_missing_targets_propagate_nan():
    assert jnp.isnan(nll(jnp.nan))


test_missing_targets_propagate_nan()
with pytest.raises(FloatingPointError):
    nll(-1.0)
