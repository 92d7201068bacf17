"""Dies by SIGSEGV in Enzyme-JAX's derivative of sort: the gradient of a median, taken through
`enzyme_jax_ir` under `jit` (enzyme-ad 0.0.16)."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir

robust_centre = enzyme_jax_ir()(lambda x: jnp.median(x))
print(jax.jit(jax.grad(robust_centre))(jnp.array([3.0, 1.0, 2.0])))
