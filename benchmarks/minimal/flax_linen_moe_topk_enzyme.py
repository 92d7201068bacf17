import jax
from enzyme_ad.jax import enzyme_jax_ir
f = enzyme_jax_ir()(lambda x: jax.lax.top_k(x, 1)[0].sum())
jax.jit(jax.grad(f))(jax.numpy.ones(2))
