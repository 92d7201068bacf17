import jax
g = jax.grad(lambda p: jax.numpy.where(p > 0, p * jax.numpy.log(p), 0.0))(0.0)
assert jax.numpy.isfinite(g)
