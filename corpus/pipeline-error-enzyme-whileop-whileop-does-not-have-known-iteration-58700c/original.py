"""Fit the rate of a gamma distribution to an empirical CDF by least squares; the CDF is the
regularised incomplete gamma function, gradients from Enzyme-JAX."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir

SHAPE = 2.0


def gamma_cdf(x, rate):
    return jax.scipy.special.gammainc(SHAPE, rate * x)


@enzyme_jax_ir()
def loss(log_rate, xs, empirical):
    rate = jnp.exp(log_rate)
    return jnp.mean((gamma_cdf(xs, rate) - empirical) ** 2)


def fit(steps=3):
    xs = jnp.linspace(0.1, 4.0, 10)
    empirical = jnp.linspace(0.05, 0.95, 10)
    log_rate = jnp.array(0.0)
    grad = jax.jit(jax.grad(loss))
    for i in range(steps):
        log_rate = log_rate - 0.2 * grad(log_rate, xs, empirical)
        print("step", i, float(log_rate))


if __name__ == "__main__":
    fit()
