import jax
g = jax.grad(jax.numpy.linalg.norm)(jax.numpy.zeros(1))
assert jax.numpy.isfinite(g).all()
