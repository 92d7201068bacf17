"""Predict vessel compass headings with a von Mises head.

A small Equinox MLP maps (synthetic) IMU/GPS features to a mean heading mu
and a concentration kappa. It is trained with the von Mises negative
log-likelihood

    -log p(theta | mu, kappa) = -kappa * cos(theta - mu) + log(2 * pi * I0(kappa))

and at the end the jitted loss is checked against a float64 SciPy reference.
"""
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from scipy import special

N_FEATURES = 8
BATCH = 256
STEPS = 60
HEADING_NOISE = 0.02  # rad, GPS-derived headings are quite precise


class HeadingModel(eqx.Module):
    mlp: eqx.nn.MLP

    def __init__(self, key):
        self.mlp = eqx.nn.MLP(N_FEATURES, 3, width_size=64, depth=2,
                              activation=jax.nn.gelu, key=key)

    def __call__(self, x):
        out = self.mlp(x)
        mu = jnp.arctan2(out[1], out[0])
        kappa = jnp.exp(out[2])
        return mu, kappa


def von_mises_nll(mu, kappa, theta):
    log_norm = jnp.log(2 * math.pi * jnp.i0(kappa))
    return jnp.mean(-kappa * jnp.cos(theta - mu) + log_norm)


def make_data(rng, n, w_true):
    x = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    clean = np.arctan2(x @ w_true[:, 1], x @ w_true[:, 0])
    theta = clean + HEADING_NOISE * rng.normal(size=n)
    return x, np.mod(theta, 2 * np.pi).astype(np.float32)


def loss_fn(model, x, theta):
    mu, kappa = jax.vmap(model)(x)
    return von_mises_nll(mu, kappa, theta)


@eqx.filter_jit
def train_step(model, opt_state, x, theta):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, theta)
    updates, opt_state = optimiser.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    model = eqx.apply_updates(model, updates)
    return model, opt_state, loss


rng = np.random.default_rng(0)
w_true = rng.normal(size=(N_FEATURES, 2))
model = HeadingModel(jax.random.PRNGKey(42))
optimiser = optax.apply_if_finite(optax.adam(3e-3), max_consecutive_errors=20)
opt_state = optimiser.init(eqx.filter(model, eqx.is_array))

for step in range(STEPS):
    x, theta = make_data(rng, BATCH, w_true)
    model, opt_state, loss = train_step(model, opt_state, jnp.asarray(x), jnp.asarray(theta))
    if step % 10 == 0 or step == STEPS - 1:
        print(f"step {step:3d}  nll {float(loss):.4f}")

x_val, theta_val = make_data(np.random.default_rng(1), 512, w_true)
mu_val, kappa_val = jax.vmap(model)(jnp.asarray(x_val))
val_loss = float(eqx.filter_jit(loss_fn)(model, jnp.asarray(x_val), jnp.asarray(theta_val)))

mu64 = np.asarray(mu_val, dtype=np.float64)
kappa64 = np.asarray(kappa_val, dtype=np.float64)
ref_nll = np.mean(-kappa64 * np.cos(theta_val - mu64)
                  + np.log(2 * np.pi) + np.log(special.i0e(kappa64)) + kappa64)
print(f"median kappa {np.median(kappa64):.2f}  max kappa {kappa64.max():.2f}")
print(f"validation nll: jax {val_loss:.5f}  scipy {ref_nll:.5f}")
np.testing.assert_allclose(val_loss, ref_nll, rtol=1e-4, atol=1e-4)
print("von Mises heading model OK")
