import jax
jax.grad(lambda a: jax.lax.linalg.householder_product(a, a[0]).sum())(jax.numpy.eye(2))
