"""Tests for a heading-regression model with a wrapped-Cauchy noise model.

A small MLP maps IMU features to a mean heading mu in radians; the residual
(theta - mu) mod 2*pi is scored with jax.scipy.stats.wrapcauchy.logpdf.
"""
import jax
import jax.numpy as jnp
from jax.scipy.stats import wrapcauchy

TWO_PI = 2.0 * jnp.pi


def init_mlp(key, sizes=(4, 32, 32, 1)):
    keys = jax.random.split(key, len(sizes) - 1)
    return [
        {"w": jax.random.normal(k, (m, n)) / jnp.sqrt(m), "b": jnp.zeros(n)}
        for k, m, n in zip(keys, sizes[:-1], sizes[1:])
    ]


def predict_heading(params, x):
    for layer in params[:-1]:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return (x @ params[-1]["w"] + params[-1]["b"]).squeeze(-1)


def sample_wrapcauchy_noise(key, c, shape):
    # inverse-CDF sampling of a wrapped Cauchy with concentration c
    u = jax.random.uniform(key, shape, minval=1e-6, maxval=1 - 1e-6)
    return (-jnp.log(c)) * jnp.tan(jnp.pi * (u - 0.5))


def heading_loss(params, x, theta, c):
    resid = jnp.mod(theta - predict_heading(params, x), TWO_PI)
    return -jnp.mean(wrapcauchy.logpdf(resid, c))


def _make_batch(c, n=256, seed=0):
    k_param, k_x, k_noise = jax.random.split(jax.random.PRNGKey(seed), 3)
    params = init_mlp(k_param)
    x = jax.random.normal(k_x, (n, 4))
    theta = jnp.mod(predict_heading(params, x) + sample_wrapcauchy_noise(k_noise, c, (n,)), TWO_PI)
    return params, x, theta


def test_loss_and_grads_finite_at_true_params():
    # well-calibrated compass (c=0.5) down to a survey-grade one (c=0.9999)
    step = jax.jit(jax.value_and_grad(heading_loss))
    for c in [0.5, 0.9, 0.99, 0.9999]:
        params, x, theta = _make_batch(c)
        loss, grads = step(params, x, theta, c)
        print(f"c={c}: nll {float(loss):.4f}")
        assert jnp.isfinite(loss), f"c={c}: loss {loss}"
        assert all(jnp.all(jnp.isfinite(g)) for g in jax.tree_util.tree_leaves(grads))


if __name__ == "__main__":
    test_loss_and_grads_finite_at_true_params()
# node: test_loss_and_grads_finite_at_true_params
