"""Enzyme-JAX's gradient of digamma disagrees with JAX's; the program compares the two."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def f(x):
    return jnp.sum(jax.scipy.special.digamma(x) * 2.0)


x = jnp.array([1.5, 2.5])
g_enzyme = jax.jit(jax.grad(enzyme_jax_ir()(f)))(x)
g_jax = jax.grad(f)(x)
print(g_enzyme, g_jax)
if not jnp.allclose(g_enzyme, g_jax, rtol=1e-3):
    raise SystemExit("gradient mismatch between Enzyme-JAX and JAX")
