"""Tests for a truncated-normal regression of machining offsets.

Parts are only logged by the inspection station when the measured offset lies
inside the gauge window [LOWER, UPPER]; anything outside is rejected upstream
and never recorded. The latent offset is linear in the machine settings, so
the likelihood of a logged part is a truncated normal on the gauge window.
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.scipy.stats import truncnorm
from scipy import stats

LOWER, UPPER = 0.0, 5.0
TRUE_PARAMS = {"w": np.array([0.8, -1.0, 0.5], np.float32), "b": np.float32(-0.5),
               "log_sigma": np.float32(np.log(0.7))}


def init_params(n_features=3):
    return {"w": jnp.zeros(n_features), "b": jnp.zeros(()), "log_sigma": jnp.zeros(())}


def predict(params, x):
    return x @ params["w"] + params["b"], jnp.exp(params["log_sigma"])


def log_likelihood(params, x, y):
    mu, sigma = predict(params, x)
    a, b = (LOWER - mu) / sigma, (UPPER - mu) / sigma
    return truncnorm.logpdf(y, a, b, loc=mu, scale=sigma)


def loss_fn(params, x, y):
    return -jnp.mean(log_likelihood(params, x, y))


optimizer = optax.adam(0.05)


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss, grads


def simulate(seed=0, n=4000):
    """Draw settings, simulate latent offsets, keep only parts inside the gauge."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    mu = x @ TRUE_PARAMS["w"] + TRUE_PARAMS["b"]
    sigma = np.exp(TRUE_PARAMS["log_sigma"])
    a, b = (LOWER - mu) / sigma, (UPPER - mu) / sigma
    y = stats.truncnorm.rvs(a, b, loc=mu, scale=sigma, random_state=rng).astype(np.float32)
    return jnp.asarray(x), jnp.asarray(y)


@pytest.fixture(scope="module")
def data():
    return simulate()


def test_simulated_data_inside_gauge(data):
    x, y = data
    assert x.shape == (4000, 3) and y.shape == (4000,)
    assert float(y.min()) >= LOWER and float(y.max()) <= UPPER


def test_log_likelihood_matches_scipy(data):
    x, y = data
    params = jax.tree_util.tree_map(jnp.asarray, TRUE_PARAMS)
    ll = log_likelihood(params, x[:200], y[:200])
    mu, sigma = predict(params, x[:200])
    mu, sigma = np.asarray(mu, np.float64), float(sigma)
    expected = stats.truncnorm.logpdf(np.asarray(y[:200], np.float64), (LOWER - mu) / sigma,
                                      (UPPER - mu) / sigma, loc=mu, scale=sigma)
    np.testing.assert_allclose(ll, expected, rtol=2e-3, atol=2e-3)


def test_density_integrates_to_one():
    params = {"w": jnp.zeros(3), "b": jnp.asarray(1.5), "log_sigma": jnp.asarray(0.0)}
    grid = jnp.linspace(LOWER, UPPER, 20001)
    x = jnp.zeros((grid.shape[0], 3))
    dens = jnp.exp(log_likelihood(params, x, grid))
    np.testing.assert_allclose(jnp.trapezoid(dens, grid), 1.0, rtol=1e-3)


def test_training_recovers_true_parameters(data):
    x, y = data
    params = init_params()
    opt_state = optimizer.init(params)
    losses = []
    for step in range(300):
        params, opt_state, loss, grads = train_step(params, opt_state, x, y)
        losses.append(float(loss))
        assert all(jnp.isfinite(g).all() for g in jax.tree_util.tree_leaves(grads)), (
            f"non-finite gradient at step {step}, loss={float(loss):.4f}")
    assert losses[-1] < losses[0]
    np.testing.assert_allclose(params["w"], TRUE_PARAMS["w"], atol=0.1)
    np.testing.assert_allclose(params["b"], TRUE_PARAMS["b"], atol=0.1)
    np.testing.assert_allclose(jnp.exp(params["log_sigma"]), 0.7, rtol=0.1)


# node: test_training_recovers_true_parameters
