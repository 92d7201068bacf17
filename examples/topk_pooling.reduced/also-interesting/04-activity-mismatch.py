# Also fails, differently: activity-mismatch: source=jax kind=integer-input
import jax
import jax.numpy as jnp
from jax import lax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda a: jnp.sum(jnp.sum(lax.top_k(lax.transpose(a, permutation=(0, 2, 1)), axis=2, k=3)[0], axis=2))), argnums=(0,)))(1)
