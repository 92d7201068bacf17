"""Fréchet distance between two Gaussians (as in FID), with the matrix square root from
jax.scipy.linalg.sqrtm; the generator's covariance factor is trained with Enzyme-JAX gradients."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def frechet(mu1, cov1, mu2, cov2):
    covmean = jnp.real(jax.scipy.linalg.sqrtm(cov1 @ cov2))
    return jnp.sum((mu1 - mu2) ** 2) + jnp.trace(cov1 + cov2 - 2 * covmean)


@enzyme_jax_ir()
def loss(factor, mu, mu_data, cov_data):
    cov = factor @ factor.T + 1e-3 * jnp.eye(3)
    return frechet(mu, cov, mu_data, cov_data)


def main():
    factor = jnp.eye(3)
    mu = jnp.zeros(3)
    mu_data = jnp.ones(3)
    cov_data = jnp.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.1], [0.0, 0.1, 0.5]])
    step = jax.jit(jax.grad(loss))
    for i in range(3):
        factor = factor - 0.05 * step(factor, mu, mu_data, cov_data)
        print("step", i, factor[0])


if __name__ == "__main__":
    main()
