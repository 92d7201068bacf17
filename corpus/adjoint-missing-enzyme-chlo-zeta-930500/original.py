"""Fit a Zipf-like law with an offset (Hurwitz zeta normaliser) to word frequencies; the offset q
is trained with Enzyme-JAX gradients."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir

S = 2.0


def log_prob(rank, q):
    return -S * jnp.log(rank + q) - jnp.log(jax.scipy.special.zeta(S, q + 1.0))


@enzyme_jax_ir()
def nll(q, ranks, counts):
    return -jnp.sum(counts * log_prob(ranks, q)) / jnp.sum(counts)


def main():
    ranks = jnp.arange(1.0, 7.0)
    counts = jnp.array([40.0, 18.0, 10.0, 6.0, 4.0, 3.0])
    q = jnp.ones(6) * 0.5
    grad = jax.jit(jax.grad(nll))
    for i in range(3):
        q = q - 0.1 * grad(q, ranks, counts)
        print("step", i, q[0])


if __name__ == "__main__":
    main()
