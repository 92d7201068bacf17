import jax
g = jax.grad(jax.numpy.sqrt)(0.0)
if not jax.numpy.isfinite(g):
    raise FloatingPointError(f"NaN in gradients {g}")
