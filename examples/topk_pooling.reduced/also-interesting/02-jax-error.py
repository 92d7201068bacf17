# Also fails, differently: jax-error: library=jax type=TypeError raised-in=jax/_src/api.py:_check_scalar message=Gradient only defined for scalar-output functions. Output was None.
import jax
import jax.numpy as jnp
from jax import lax
from enzyme_ad.jax import enzyme_jax_ir

def f(a):
    pass
a = jnp.ones((1, 7, 1), jnp.float32)
fn0 = enzyme_jax_ir()(f)
fn1 = jax.grad(fn0, argnums=(0,))
fn2 = jax.jit(fn1)
print(fn2(a))
