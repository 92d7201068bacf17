# Under jit, XLA's algebraic simplifier reassociates chained divisions:
# (a / b) / c  ->  a / (b * c)   and   a / (b / c)  ->  (a * c) / b.
# The new intermediate b*c (or a*c) overflows/underflows even though every
# value in the original expression is an ordinary float32, so jit returns
# 0 / inf where op-by-op evaluation (and NumPy) give finite results.
import numpy as np
import jax

a = np.array([1e30, 1e-30], dtype=np.float32)
b = np.array([1e20, 1e-20], dtype=np.float32)
c = np.array([1e20, 1e-20], dtype=np.float32)

f = lambda a, b, c: (a / b) / c
g = lambda a, b, c: a / (b / c)
print("(a/b)/c  jit:", jax.jit(f)(a, b, c), " numpy:", f(a, b, c))   # expect [1e-10, 1e10]
print("a/(b/c)  jit:", jax.jit(g)(a, b, c), " numpy:", g(a, b, c))   # expect [1e30, 1e-30]
np.testing.assert_allclose(np.asarray(jax.jit(f)(a, b, c)), f(a, b, c), rtol=1e-6)
np.testing.assert_allclose(np.asarray(jax.jit(g)(a, b, c)), g(a, b, c), rtol=1e-6)
