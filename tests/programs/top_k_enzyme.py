"""Enzyme-JAX has no adjoint for chlo.top_k: a top-k pooling layer trained with Enzyme gradients."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir

K = 2


def pool(h):
    values, _ = jax.lax.top_k(h, K)
    return values.mean(-1)


@enzyme_jax_ir()
def loss(w, x, y):
    return jnp.mean((pool(jnp.tanh(x @ w)) - y) ** 2)


def main():
    w = jnp.ones((4, 5)) * 0.1
    x = jnp.linspace(-1, 1, 12).reshape(3, 4)
    y = jnp.array([0.5, -0.5, 0.0])
    step = jax.jit(jax.grad(loss))
    for _ in range(2):
        w = w - 0.1 * step(w, x, y)
    print(w)


if __name__ == "__main__":
    main()
