import jax
from enzyme_ad.jax import enzyme_jax_ir
f = enzyme_jax_ir()(lambda x: jax.numpy.cumprod(x).sum())
jax.jit(jax.grad(f))(jax.numpy.ones(2))
