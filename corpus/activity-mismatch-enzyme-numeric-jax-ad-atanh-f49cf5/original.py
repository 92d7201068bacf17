# reducer hunt: jnp.arctanh under grad through enzyme in float32

import jax
import jax.numpy as jnp
import numpy as np
from enzyme_ad.jax import enzyme_jax_ir

c = jnp.asarray([ 0.6155768170627185,  0.2153900641921477, -0.5905390268015631], dtype=jnp.float32)
m = jnp.asarray([[ 2.2445273669521923 ,  0.49310187868891453,  0.4281971495422544 ], [-0.3983495208316229 ,  2.158086038161198  ,  0.4540474926015805 ], [-0.2691850758600871 ,  0.40973323257215377,  2.2647201463776856 ]], dtype=jnp.float32)
k = 2


def op(x):
    return jnp.arctanh(x)


def loss(x):
    return jnp.sum(jnp.real(op(x)))


F = enzyme_jax_ir()(op)
L = enzyme_jax_ir()(loss)
x = jnp.asarray([-0.6752462663092038, -0.264379448997246 , -0.5021340027394285], dtype=jnp.float32)


def derivative(x):
    return jax.grad(L)(x)


result = jax.jit(derivative)(x)
