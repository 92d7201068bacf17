"""Origin: +inf in forward of exp via jnp.exp (the hand-written softplus jnp.log(1 + jnp.exp(x)))
Fix: use jax.nn.softplus (or jnp.logaddexp(0.0, x)) instead of the hand-written formula.

An Equinox house-price regressor with a hand-written softplus activation, tested against a float64
NumPy port of the same network. The features (floor area, lot size, year built, ...) go in
unnormalised, so the hidden pre-activations reach the hundreds; `jnp.exp` overflows float32 above
about 88.7 and the activation is +inf where NumPy's `np.logaddexp(0, x)` is finite, so the test's
`np.testing.assert_allclose` of the hidden features fails.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


def softplus(x):
    return jnp.log(1.0 + jnp.exp(x))


class PriceModel(eqx.Module):
    hidden: eqx.nn.Linear
    head: eqx.nn.Linear

    def __init__(self, n_features, width, *, key):
        k_hidden, k_head = jax.random.split(key)
        self.hidden = eqx.nn.Linear(n_features, width, key=k_hidden)
        self.head = eqx.nn.Linear(width, "scalar", key=k_head)

    def features(self, x):
        return softplus(self.hidden(x))

    def __call__(self, x):
        return self.head(self.features(x))


def make_listings(n, seed=0):
    rng = np.random.default_rng(seed)
    area = rng.uniform(600, 4000, n)          # square feet
    lot = rng.uniform(2000, 20000, n)         # square feet
    bedrooms = rng.integers(1, 6, n)
    year = rng.integers(1950, 2021, n)
    x = np.stack([area, lot, bedrooms, year], axis=1).astype(np.float32)
    price = 150.0 * area + 2.0 * lot + 5000.0 * bedrooms + 300.0 * (year - 1950)
    return x, price.astype(np.float32)


def numpy_features(model, x):
    w = np.asarray(model.hidden.weight, dtype=np.float64)
    b = np.asarray(model.hidden.bias, dtype=np.float64)
    return np.logaddexp(0.0, x.astype(np.float64) @ w.T + b)


def numpy_predict(model, x):
    w = np.asarray(model.head.weight, dtype=np.float64)
    b = np.asarray(model.head.bias, dtype=np.float64)
    return numpy_features(model, x) @ w.T + b


@eqx.filter_jit
def batched_features(model, x):
    return jax.vmap(model.features)(x)


def test_features_match_numpy():
    model = PriceModel(4, 32, key=jax.random.PRNGKey(42))
    x, _ = make_listings(128)
    got = np.asarray(batched_features(model, jnp.asarray(x)))
    np.testing.assert_allclose(got, numpy_features(model, x), rtol=1e-4, atol=1e-4)


def test_predictions_match_numpy():
    model = PriceModel(4, 32, key=jax.random.PRNGKey(42))
    x, _ = make_listings(128)
    got = np.asarray(eqx.filter_jit(jax.vmap(model))(jnp.asarray(x)))
    np.testing.assert_allclose(got, numpy_predict(model, x)[:, 0], rtol=1e-4, atol=1e-2)


if __name__ == "__main__":
    test_features_match_numpy()
    test_predictions_match_numpy()
    print("all tests passed")
