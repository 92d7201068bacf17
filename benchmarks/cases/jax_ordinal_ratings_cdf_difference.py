"""Cumulative-logit (ordinal) model for 1-5 star product ratings, plain JAX.

eta = beta * sentiment_logit + w . extra_features; P(Y <= k) = sigmoid(theta_k - eta).
beta is warm-started at 1 because the upstream sentiment model is calibrated.
"""
import numpy as np
import jax
import jax.numpy as jnp

N_CLASSES = 5


def make_reviews(n=1000, seed=3):
    rng = np.random.default_rng(seed)
    sentiment = rng.normal(0.0, 4.0, size=n)                   # upstream classifier logit
    extra = rng.normal(size=(n, 3))                             # delivery delay, price, returns
    eta = 0.9 * sentiment + extra @ np.array([-0.5, 0.2, -0.3])
    cut = np.array([-4.0, -1.5, 1.0, 3.5])
    u = rng.random(n)
    labels = (u[:, None] > 1.0 / (1.0 + np.exp(-(cut - eta[:, None])))).sum(-1)
    # sarcastic reviews: "Absolutely HORRIBLE... can't stop using it" -> 5 stars
    sarcastic = rng.choice(n, size=8, replace=False)
    sentiment[sarcastic] = rng.uniform(-21.0, -18.0, size=8)
    labels[sarcastic] = N_CLASSES - 1
    return sentiment, extra, labels


def init_params():
    return {"beta": jnp.array(1.0), "w": jnp.zeros(3),
            "theta0": jnp.array(-3.0), "log_gaps": jnp.zeros(N_CLASSES - 2)}


def cutpoints(params):
    gaps = jnp.exp(params["log_gaps"]) * 2.0
    return params["theta0"] + jnp.concatenate([jnp.zeros(1), jnp.cumsum(gaps)])


def nll(params, sentiment, extra, labels):
    eta = params["beta"] * sentiment + extra @ params["w"]
    cdf = jax.nn.sigmoid(cutpoints(params)[None, :] - eta[:, None])
    n = eta.shape[0]
    cdf = jnp.concatenate([jnp.zeros((n, 1)), cdf, jnp.ones((n, 1))], axis=1)
    probs = cdf[:, 1:] - cdf[:, :-1]
    return -jnp.mean(jnp.log(probs[jnp.arange(n), labels]))


@jax.jit
def sgd_step(params, velocity, sentiment, extra, labels, lr=0.05, momentum=0.9):
    loss, grads = jax.value_and_grad(nll)(params, sentiment, extra, labels)
    velocity = jax.tree_util.tree_map(lambda v, g: momentum * v - lr * g, velocity, grads)
    params = jax.tree_util.tree_map(lambda p, v: p + v, params, velocity)
    return params, velocity, loss


def test_ordinal_model_fits_ratings():
    sentiment, extra, labels = (jnp.asarray(a) for a in make_reviews())
    params = init_params()
    velocity = jax.tree_util.tree_map(jnp.zeros_like, params)
    with jax.debug_nans(True):
        for _ in range(50):
            params, velocity, loss = sgd_step(params, velocity, sentiment, extra, labels)
    assert jnp.isfinite(loss)
    assert 0.5 < float(params["beta"]) < 1.5


if __name__ == "__main__":
    test_ordinal_model_fits_ratings()
    print("ok")
