"""Calls an Enzyme-JAX-wrapped sort forward only, never differentiating it: runs cleanly."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir

robust_centre = enzyme_jax_ir()(lambda x: jnp.median(x))
print(jax.jit(robust_centre)(jnp.array([3.0, 1.0, 2.0])))
