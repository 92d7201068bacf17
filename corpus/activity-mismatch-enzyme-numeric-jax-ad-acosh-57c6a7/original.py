# reducer hunt: jnp.arccosh under grad through enzyme in float32

import jax
import jax.numpy as jnp
import numpy as np
from enzyme_ad.jax import enzyme_jax_ir

c = jnp.asarray([-0.6965196380529661 , -0.33985251138920514, -0.7209704686960146 ], dtype=jnp.float32)
m = jnp.asarray([[ 1.6590333259920067 ,  0.08841096137619464,  0.17424150476426759], [ 0.4584934936549089 ,  2.2491113624289003 ,  0.4223771089481465 ], [-0.43458656679072105,  0.1113691470200554 ,  2.4115961485782345 ]], dtype=jnp.float32)
k = 2


def op(x):
    return jnp.arccosh(x)


def loss(x):
    return jnp.sum(jnp.real(op(x)))


F = enzyme_jax_ir()(op)
L = enzyme_jax_ir()(loss)
x = jnp.asarray([1.962922873737925, 1.791342016317146, 2.575147190500514], dtype=jnp.float32)


def derivative(x):
    return jax.grad(L)(x)


result = jax.jit(derivative)(x)
