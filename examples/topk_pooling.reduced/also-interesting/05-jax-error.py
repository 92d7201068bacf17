# Also fails, differently: jax-error: library=enzyme_ad type=RuntimeError raised-in=enzyme_ad/jax/primitives.py:_enzyme_primal_impl message=must be JIT'ed
import jax
import jax.numpy as jnp
from jax import lax
from enzyme_ad.jax import enzyme_jax_ir
jax.grad(enzyme_jax_ir()(lambda a: jnp.sum(jnp.sum(lax.top_k(lax.transpose(a, permutation=(0, 2, 1)), axis=2, k=3)[0], axis=2))), argnums=(0,))(jnp.ones((1, 7, 1), jnp.float32))
