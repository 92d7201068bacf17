"""A chi-square log-likelihood of squared residuals with two degrees of freedom: `chi2.logpdf(0.0, 2.0)`
is NaN in JAX (`0 * log(0)` inside it), where its value is log(1/2). An inner `where` around that `log`
fixes it, but only inside `logpdf`, and SciPy's `chi2.logpdf` gives the value: the call's."""
import jax.numpy as jnp
from jax.scipy.stats import chi2


def log_likelihood(residuals):
    return chi2.logpdf(residuals ** 2, 2.0).sum()


residuals = jnp.array([0.0, 0.5, 1.5])
ll = log_likelihood(residuals)
assert jnp.isfinite(ll), f"log-likelihood is {ll}"
