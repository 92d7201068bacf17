"""A custom_vjp rule that returns too few cotangents (JAX activity/structure mismatch)."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def scale(x, s):
    return x * s


def scale_fwd(x, s):
    return x * s, s


def scale_bwd(s, g):
    return (g * s,)


scale.defvjp(scale_fwd, scale_bwd)


def loss(x):
    return jnp.sum(scale(x, 2.0) ** 2)


print(jax.grad(loss)(jnp.ones(3)))
