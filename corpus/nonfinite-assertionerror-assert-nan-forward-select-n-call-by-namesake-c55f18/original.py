"""A von Mises likelihood for wind headings, with a uniform prior on the circle (kappa = 0)."""
import jax
import jax.numpy as jnp
from jax.scipy.stats import vonmises


def neg_log_posterior(mu, theta):
    likelihood = vonmises.logpdf(theta - mu, 4.0).sum()
    prior = vonmises.logpdf(mu, 0.0).sum()  # kappa = 0: uniform, log-density -log(2 pi)
    return -(likelihood + prior)


theta = jnp.linspace(-1.0, 1.0, 16)
mu = jnp.zeros(16)
loss, grad = jax.jit(jax.value_and_grad(neg_log_posterior))(mu, theta)
assert jnp.isfinite(loss), f"loss is {loss}"
