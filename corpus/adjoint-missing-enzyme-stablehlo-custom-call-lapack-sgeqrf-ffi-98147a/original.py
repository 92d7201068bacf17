"""An orthogonally-parametrised linear layer: the weight is the Q factor of a free matrix, trained
with Enzyme-JAX gradients."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def orthogonal(a):
    q, r = jnp.linalg.qr(a)
    return q * jnp.sign(jnp.diag(r))


@enzyme_jax_ir()
def loss(a, x, y):
    w = orthogonal(a)
    return jnp.mean((x @ w - y) ** 2)


def main():
    key = jax.random.PRNGKey(0)
    a = jax.random.normal(key, (4, 4))
    x = jax.random.normal(key, (10, 4))
    y = x[:, ::-1]
    step = jax.jit(jax.grad(loss))
    for i in range(3):
        a = a - 0.1 * step(a, x, y)
        print("step", i, float(loss(a, x, y)))


if __name__ == "__main__":
    main()
