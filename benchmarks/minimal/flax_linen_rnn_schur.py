import jax
jax.grad(lambda x: jax.scipy.linalg.schur(x)[0].sum())(jax.numpy.eye(2))
