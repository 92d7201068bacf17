"""Fit the concentration of a von Mises-like directional model whose normaliser uses the
exponentially scaled Bessel function i1e; gradients from Enzyme-JAX."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def mean_resultant(kappa):
    # A(kappa) = I1(kappa) / I0(kappa), with the scaled Bessel functions for stability
    return jax.lax.bessel_i1e(kappa) / jax.lax.bessel_i0e(kappa)


@enzyme_jax_ir()
def loss(log_kappa, observed_r):
    kappa = jnp.exp(log_kappa)
    return jnp.sum((mean_resultant(kappa) - observed_r) ** 2)


def main():
    angles = jnp.array([0.1, -0.2, 0.05, 0.3, -0.1])
    observed_r = jnp.abs(jnp.mean(jnp.exp(1j * angles))).astype(jnp.float32)
    log_kappa = jnp.zeros(1)
    grad = jax.jit(jax.grad(loss))
    for i in range(3):
        log_kappa = log_kappa - 0.5 * grad(log_kappa, observed_r)
        print("step", i, log_kappa)


if __name__ == "__main__":
    main()
