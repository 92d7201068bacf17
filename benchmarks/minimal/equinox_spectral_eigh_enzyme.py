import jax
from enzyme_ad.jax import enzyme_jax_ir
f = enzyme_jax_ir()(lambda x: jax.numpy.linalg.eigh(x)[0].sum())
jax.jit(jax.grad(f))(jax.numpy.eye(2))
