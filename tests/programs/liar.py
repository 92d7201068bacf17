"""Raises the mismatch message without any gradient disagreement: not evidence of the bug."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir

f = jnp.sin
g = jax.jit(jax.grad(enzyme_jax_ir()(f)))(1.0)
print(g, jax.grad(f)(1.0))
raise SystemExit("gradient mismatch between Enzyme-JAX and JAX")
