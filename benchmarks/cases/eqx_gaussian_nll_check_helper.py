"""Heteroscedastic regression of next-day peak electricity load (Equinox + Optax).

An MLP maps weather and calendar features to the mean and log-variance of a
Gaussian over the next day's peak load in megawatts. Training minimises the
Gaussian negative log-likelihood; held-out data is reported as the average
log-likelihood. Before training, `check_log_likelihood` compares the JAX
log-likelihood with a float64 NumPy reference on a few training samples.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

N_FEATURES = 5


class LoadModel(eqx.Module):
    mlp: eqx.nn.MLP

    def __init__(self, key):
        self.mlp = eqx.nn.MLP(N_FEATURES, 2, width_size=64, depth=2, activation=jax.nn.gelu, key=key)

    def __call__(self, x):
        out = self.mlp(x)
        return out[0], out[1]  # mean, log-variance


def log_likelihood(model, x, y):
    """Per-sample log N(y | mu, sigma^2)."""
    mu, log_var = jax.vmap(model)(x)
    var = jnp.exp(log_var)
    density = jnp.exp(-0.5 * (y - mu) ** 2 / var) / jnp.sqrt(2 * jnp.pi * var)
    return jnp.log(density)


def reference_log_likelihood(mu, log_var, y):
    mu, log_var, y = (np.asarray(a, dtype=np.float64) for a in (mu, log_var, y))
    return -0.5 * (np.log(2 * np.pi) + log_var + (y - mu) ** 2 / np.exp(log_var))


def check_log_likelihood(model, x, y):
    mu, log_var = jax.vmap(model)(x)
    got = np.asarray(log_likelihood(model, x, y))
    want = reference_log_likelihood(mu, log_var, y)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5,
                               err_msg="log-likelihood disagrees with the NumPy reference")


def nll_loss(model, x, y):
    mu, log_var = jax.vmap(model)(x)
    return jnp.mean(0.5 * (log_var + (y - mu) ** 2 / jnp.exp(log_var)))


@eqx.filter_jit
def train_step(model, opt_state, x, y):
    loss, grads = eqx.filter_value_and_grad(nll_loss)(model, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss


def make_data(rng, n):
    temp = rng.normal(15.0, 8.0, n)          # deg C
    humidity = rng.uniform(20.0, 95.0, n)    # percent
    wind = rng.gamma(2.0, 3.0, n)            # m/s
    weekday = rng.integers(0, 7, n)
    holiday = rng.uniform(size=n) < 0.03
    load = 520.0 + 1.8 * (temp - 17.0) ** 2 + 0.6 * humidity - 2.0 * wind
    load = load - 60.0 * (weekday >= 5) - 90.0 * holiday
    load = load + rng.normal(0.0, 15.0 + 0.4 * np.abs(temp - 17.0), n)  # MW
    x = np.stack([temp, humidity, wind, weekday, holiday], axis=1)
    return x.astype(np.float32), load.astype(np.float32)


rng = np.random.default_rng(0)
x, y = make_data(rng, 1200)
x = (x - x[:1000].mean(0)) / x[:1000].std(0)  # standardise the features
x_train, y_train = jnp.asarray(x[:1000]), jnp.asarray(y[:1000])
x_val, y_val = jnp.asarray(x[1000:]), jnp.asarray(y[1000:])

model = LoadModel(jax.random.PRNGKey(0))
optimizer = optax.adam(3e-3)
opt_state = optimizer.init(eqx.filter(model, eqx.is_array))

check_log_likelihood(model, x_train[:16], y_train[:16])

for epoch in range(20):
    perm = rng.permutation(1000)
    for i in range(0, 1000, 100):
        idx = perm[i:i + 100]
        model, opt_state, loss = train_step(model, opt_state, x_train[idx], y_train[idx])
    print(f"epoch {epoch:2d}  nll {float(loss):.3f}")

print(f"held-out log-likelihood: {float(jnp.mean(log_likelihood(model, x_val, y_val))):.3f}")
