import jax.numpy as jnp, numpy as np
# numpy.modf / C99 modf: modf(+-inf) -> (+-0.0, +-inf). jnp.modf is documented as the JAX implementation of numpy.modf.
x = np.array([np.inf, -np.inf, 2.5], np.float32)
frac, whole = jnp.modf(jnp.asarray(x))
efrac, ewhole = np.modf(x)
print('jax  ', np.asarray(frac), np.asarray(whole))
print('numpy', efrac, ewhole)
np.testing.assert_array_equal(np.asarray(whole), ewhole)
assert np.array_equal(np.asarray(frac), efrac), f"jnp.modf fractional part for +-inf is {np.asarray(frac)[:2]}, numpy gives {efrac[:2]}"
