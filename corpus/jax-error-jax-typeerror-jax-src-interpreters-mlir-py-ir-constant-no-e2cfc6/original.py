# reducer hunt: special.exp1 under hessian through jax in float32

import jax
import jax.numpy as jnp
import numpy as np

c = jnp.asarray([-0.4927417432509434, -0.2456675890640721,  0.3531625406039677], dtype=jnp.float32)
m = jnp.asarray([[ 1.9972280926470245 , -0.16677554864487554,  0.09895257843140481], [-0.2597737725973671 ,  2.2401635731175644 ,  0.20621259232017386], [ 0.05209370168549776, -0.444342442333136  ,  2.071864632181898  ]], dtype=jnp.float32)
k = 2


def op(x):
    return jax.scipy.special.exp1(x)


def loss(x):
    return jnp.sum(jnp.real(op(x)))


F = op
L = loss
x = jnp.asarray([1.560820855590808 , 1.124735439085502 , 1.7778655957309044], dtype=jnp.float32)


def derivative(x):
    return jax.hessian(L)(x)


result = derivative(x)
