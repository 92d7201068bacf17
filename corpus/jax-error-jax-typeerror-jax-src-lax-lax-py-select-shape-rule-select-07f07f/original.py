import jax, jax.numpy as jnp, numpy as np
from jax import lax
# lax.clamp documents/accepts a scalar min (or max) with an array operand (shape rule: min.shape == () allowed).
x = jnp.array([0.0, 0.5, 1.0, 1.5])
f = lambda lo: lax.clamp(lo, x, 2.0).sum()   # d/dlo = number of elements below lo
print('value ok:', f(0.7))
g = jax.grad(f)(0.7)                          # raises TypeError: select cases must have the same shapes, got [(4,), ()]
assert np.isclose(g, 2.0), g
