"""Waiting times between failures: a gamma model with right-censored units, fitted with optax."""
import jax
import jax.numpy as jnp
import optax
from jax.scipy.stats import gamma

observed = jnp.array([3.1, 7.4, 1.2, 5.5, 9.8, 2.2, 4.0])
censored_at = jnp.array([30.0, 365.0])  # units still running at the end of the study (days)

params = {"log_shape": jnp.array(0.0), "log_scale": jnp.array(0.0)}


def neg_log_lik(params):
    a = jnp.exp(params["log_shape"])
    scale = jnp.exp(params["log_scale"])
    events = gamma.logpdf(observed, a, scale=scale).sum()
    survivors = gamma.logsf(censored_at, a, scale=scale).sum()
    return -(events + survivors)


opt = optax.sgd(1e-3)
state = opt.init(params)
loss, grads = jax.value_and_grad(neg_log_lik)(params)
assert jnp.isfinite(loss), f"censored likelihood is {loss}"
updates, state = opt.update(grads, state)
params = optax.apply_updates(params, updates)
print(params)
