"""Enzyme-JAX has no adjoint for stablehlo.reduce_precision (a small program of the project's own)."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


@enzyme_jax_ir()
def loss(w, x):
    h = jax.lax.reduce_precision(jnp.tanh(x @ w), exponent_bits=5, mantissa_bits=10)
    return jnp.sum(h * h)


w = jnp.ones((3, 2))
x = jnp.arange(6.0).reshape(2, 3)
print(jax.jit(jax.grad(loss))(w, x))
