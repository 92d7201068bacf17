"""A log-likelihood of a zero rate: log(0) in the forward computation, caught by the program's own raise."""
import jax.numpy as jnp

rate = jnp.array([0.5, 0.0, 2.0])
nll = -jnp.sum(jnp.log(rate))
if not jnp.isfinite(nll):
    raise ValueError(f"negative log-likelihood is {nll}")
