import jax, jax.numpy as jnp
nll = lambda eta: -jnp.log(1.0 - jax.nn.sigmoid(3.0 - eta))  # -log P(5 stars) = -log(cdf[5] - cdf[4])
with jax.debug_nans(True):
    jax.grad(nll)(jnp.array(-20.0))
