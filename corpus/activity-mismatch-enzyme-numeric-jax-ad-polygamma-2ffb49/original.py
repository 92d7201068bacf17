# reducer hunt: special.polygamma under grad through enzyme in float32

import jax
import jax.numpy as jnp
import numpy as np
from enzyme_ad.jax import enzyme_jax_ir

c = jnp.asarray([-0.6367134837662206 ,  0.35981200477719366,  0.23656054730692544], dtype=jnp.float32)
m = jnp.asarray([[ 2.3565888083564253 ,  0.4353327396100767 , -0.45479572006461755], [-0.17998830692476575,  1.7388104742702515 ,  0.38421496492771945], [ 0.4567953261925157 ,  0.49755039977482685,  2.2948917538050555 ]], dtype=jnp.float32)
k = 2


def op(x):
    return jax.scipy.special.polygamma(2, x)


def loss(x):
    return jnp.sum(jnp.real(op(x)))


F = enzyme_jax_ir()(op)
L = enzyme_jax_ir()(loss)
x = jnp.asarray([1.8569552208116886, 0.7060085437970585, 1.0271104353836193], dtype=jnp.float32)


def derivative(x):
    return jax.grad(L)(x)


result = jax.jit(derivative)(x)
