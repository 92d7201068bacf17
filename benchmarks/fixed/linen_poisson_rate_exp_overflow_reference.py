"""Poisson GLM-style MLP for hourly bike-rental counts (flax.linen).

Unit check: the per-example negative log-likelihood computed by the jitted
model must match a float64 SciPy reference built from the same parameters.
"""
import jax
import jax.numpy as jnp
import numpy as np
import flax.linen as nn

jax.config.update("jax_enable_x64", True)  # rates exceed float32 range
from scipy import stats

CONFIG = {
    "hidden": 16,
    "n_samples": 256,
    "seed": 3,
    "rtol": 1e-3,
    "atol": 1e-4,
}


class RateNet(nn.Module):
    hidden: int

    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.Dense(self.hidden, name="dense_0")(x))
        log_rate = nn.Dense(1, name="head")(h)
        return log_rate[..., 0]


def poisson_nll(log_rate, counts):
    # -log p(y | rate) = rate - y log(rate) + log(y!)
    rate = jnp.exp(log_rate)
    return rate - counts * log_rate + jax.scipy.special.gammaln(counts + 1.0)


def make_dataset(key, n):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    hour = jax.random.randint(k1, (n,), 0, 24).astype(jnp.float32)
    temp_k = jax.random.normal(k2, (n,)) * 8.0 + 288.0
    humidity = jax.random.uniform(k3, (n,), minval=20.0, maxval=100.0)
    # raw station features, not standardised
    x = jnp.stack([hour, temp_k, humidity], axis=-1)
    true_rate = np.exp(1.5 + 0.04 * (np.asarray(temp_k) - 273.15) - 0.01 * np.asarray(humidity))
    counts = jax.random.poisson(k4, jnp.asarray(true_rate)).astype(jnp.float32)
    return x, counts


def reference_nll(params, x, counts):
    p = jax.tree_util.tree_map(lambda a: np.asarray(a, dtype=np.float64), params)
    x64 = np.asarray(x, dtype=np.float64)
    h = np.maximum(x64 @ p["dense_0"]["kernel"] + p["dense_0"]["bias"], 0.0)
    log_rate = (h @ p["head"]["kernel"] + p["head"]["bias"])[:, 0]
    counts64 = np.asarray(counts, dtype=np.float64)
    return -stats.poisson.logpmf(counts64, np.exp(log_rate))


def main():
    key = jax.random.PRNGKey(CONFIG["seed"])
    data_key, init_key = jax.random.split(key)
    x, counts = make_dataset(data_key, CONFIG["n_samples"])
    print("x range:", float(x.min()), float(x.max()), " mean count:", float(counts.mean()))

    model = RateNet(hidden=CONFIG["hidden"])
    variables = model.init(init_key, x[:1])
    params = variables["params"]

    @jax.jit
    def per_example_nll(params, x, counts):
        log_rate = model.apply({"params": params}, x)
        return poisson_nll(log_rate, counts)

    nll = per_example_nll(params, x, counts)
    ref = reference_nll(params, x, counts)
    print("mean nll (jax):", float(jnp.mean(nll)))
    print("mean nll (ref):", float(np.mean(ref)))
    np.testing.assert_allclose(np.asarray(nll), ref, rtol=CONFIG["rtol"], atol=CONFIG["atol"])
    print("OK")


if __name__ == "__main__":
    main()
