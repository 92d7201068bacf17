import jax
g = jax.grad(jax.numpy.arccos)(1.0)
assert jax.numpy.isfinite(g)
