"""Whitened linear regression: the design is whitened with a fixed lower-triangular factor and the
weights are trained with Enzyme-JAX gradients."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir

N, D = 6, 3


def whiten(l, x):
    return jax.scipy.linalg.solve_triangular(l, x, lower=True)


@enzyme_jax_ir()
def loss(l, w, x, y):
    z = whiten(l, x)
    return jnp.mean((z @ w - y) ** 2)


def main():
    key = jax.random.PRNGKey(0)
    a = jax.random.normal(key, (N, N))
    l = jnp.tril(a) + N * jnp.eye(N)
    x = jax.random.normal(key, (N, D))
    y = jnp.ones(N)
    w = jnp.zeros(D)
    step = jax.jit(jax.grad(loss, argnums=(0, 1)))
    for i in range(3):
        gl, gw = step(l, w, x, y)
        w = w - 0.1 * gw
        l = l - 0.01 * jnp.tril(gl)
        print(i, w)


if __name__ == "__main__":
    main()
