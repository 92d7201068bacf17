"""Gaussian-process regression: fit the kernel length scale by maximising the marginal likelihood,
with gradients from Enzyme-JAX."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def rbf(x1, x2, log_scale):
    d = (x1[:, None] - x2[None, :]) ** 2
    return jnp.exp(-0.5 * d / jnp.exp(2 * log_scale))


@enzyme_jax_ir()
def neg_log_marginal(log_scale, x, y):
    k = rbf(x, x, log_scale) + 1e-3 * jnp.eye(x.shape[0])
    chol = jnp.linalg.cholesky(k)
    alpha = jax.scipy.linalg.cho_solve((chol, True), y)
    return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(chol)))


def fit(steps=4):
    x = jnp.linspace(0.0, 3.0, 8)
    y = jnp.sin(2 * x)
    log_scale = jnp.array(0.0)
    grad = jax.jit(jax.grad(neg_log_marginal))
    for i in range(steps):
        log_scale = log_scale - 0.05 * grad(log_scale, x, y)
        print("step", i, float(log_scale))
    return log_scale


if __name__ == "__main__":
    fit()
