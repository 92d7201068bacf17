# Also fails, differently: jax-error: library=jax type=TypeError raised-in=jax/_src/lax/lax.py:_transpose_shape_rule message=transpose permutation isn't a permutation of operand dimensions, got <value>
import jax
import jax.numpy as jnp
from jax import lax
from enzyme_ad.jax import enzyme_jax_ir

def f(a):
    b = lax.transpose(a, permutation=(0, 2, 1))
    c, d = lax.top_k(b, axis=2, k=3)
    e = jnp.sum(c, axis=2)
    f_ = jnp.sum(e)
    return f_
a = 1.0
fn0 = enzyme_jax_ir()(f)
fn1 = jax.grad(fn0, argnums=(0,))
fn2 = jax.jit(fn1)
print(fn2(a))
