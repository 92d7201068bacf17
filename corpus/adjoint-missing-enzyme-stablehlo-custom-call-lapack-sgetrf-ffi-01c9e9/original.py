"""A linear normalising flow: the log-likelihood uses log|det W| (computed through an LU
factorisation by slogdet); gradients from Enzyme-JAX."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def log_prob_base(z):
    return -0.5 * jnp.sum(z ** 2, axis=-1) - 0.5 * z.shape[-1] * jnp.log(2 * jnp.pi)


@enzyme_jax_ir()
def nll(w, x):
    z = x @ w
    _, logdet = jnp.linalg.slogdet(w)
    return -jnp.mean(log_prob_base(z) + logdet)


def main():
    key = jax.random.PRNGKey(0)
    w = jnp.eye(3) + 0.1 * jax.random.normal(key, (3, 3))
    x = jax.random.normal(key, (20, 3)) * 2.0
    step = jax.jit(jax.grad(nll))
    for i in range(3):
        w = w - 0.05 * step(w, x)
        print("step", i, float(nll(w, x)))


if __name__ == "__main__":
    main()
