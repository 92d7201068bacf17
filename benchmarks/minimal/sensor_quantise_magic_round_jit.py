import numpy
import jax
f = lambda a: a + 12582912.0 - 12582912.0
a = jax.numpy.float32(0.5)
numpy.testing.assert_allclose(jax.jit(f)(a), f(a))
