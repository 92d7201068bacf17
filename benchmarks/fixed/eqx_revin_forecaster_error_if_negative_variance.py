"""Short-horizon barometric pressure forecaster.

An MLP forecaster wrapped in RevIN (reversible instance normalisation): each
input window is normalised by its own mean / std, the MLP predicts the
normalised future, and the prediction is mapped back to Pascal.  The model
guards its output with eqx.error_if so a bad batch stops training instead of
silently poisoning the weights.
"""
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

CONFIG = {
    "seed": 42,
    "days": 60,
    "window": 48,        # hours of history
    "horizon": 12,       # hours to forecast
    "stride": 6,
    "width": 64,
    "depth": 2,
    "lr": 1e-3,
    "batch_size": 32,
    "epochs": 3,
    "revin_eps": 1e-5,
}


# ----------------------------------------------------------------------------
# synthetic station data (Pa)
# ----------------------------------------------------------------------------
def simulate_station(rng, days):
    hours = np.arange(24 * days)
    synoptic = np.cumsum(rng.normal(0.0, 3.0, hours.size))       # slow weather systems
    diurnal = 40.0 * np.sin(2 * np.pi * hours / 24.0)             # atmospheric tide
    sensor = rng.normal(0.0, 2.0, hours.size)
    return 101325.0 + synoptic + diurnal + sensor


def make_windows(series, window, horizon, stride):
    total = window + horizon
    w = np.lib.stride_tricks.sliding_window_view(series, total)[::stride]
    w = w.astype(np.float32)
    return w[:, :window], w[:, window:]


# ----------------------------------------------------------------------------
# model
# ----------------------------------------------------------------------------
def _moments(x):
    # two passes: centre first, then average the squared deviations.  The
    # one-pass E[x^2] - E[x]^2 cancels catastrophically in float32 when the
    # mean (~1e5 Pa) is much larger than the spread, and can go negative.
    mean = jnp.mean(x, axis=-1, keepdims=True)
    centred = x - mean
    return mean, jnp.mean(centred * centred, axis=-1, keepdims=True)


class RevIN(eqx.Module):
    gamma: jax.Array
    beta: jax.Array
    eps: float = eqx.field(static=True)

    def __init__(self, eps):
        self.gamma = jnp.ones(())
        self.beta = jnp.zeros(())
        self.eps = eps

    def statistics(self, x):
        mean, var = _moments(x)
        std = jnp.sqrt(var + self.eps)
        return mean, std

    def normalize(self, x, mean, std):
        return (x - mean) / std * self.gamma + self.beta

    def denormalize(self, y, mean, std):
        return (y - self.beta) / self.gamma * std + mean


class Forecaster(eqx.Module):
    revin: RevIN
    mlp: eqx.nn.MLP

    def __init__(self, cfg, key):
        self.revin = RevIN(cfg["revin_eps"])
        self.mlp = eqx.nn.MLP(cfg["window"], cfg["horizon"], cfg["width"],
                              cfg["depth"], activation=jax.nn.gelu, key=key)

    def __call__(self, history):
        mean, std = self.revin.statistics(history)
        z = self.revin.normalize(history, mean, std)
        z_future = self.mlp(z)
        pred = self.revin.denormalize(z_future, mean, std)
        pred = eqx.error_if(pred, jnp.any(~jnp.isfinite(pred)),
                            "Forecaster produced a non-finite prediction")
        return pred


# ----------------------------------------------------------------------------
# training
# ----------------------------------------------------------------------------
def loss_fn(model, x, y):
    pred = jax.vmap(model)(x)
    # compare in hPa so the loss is O(1)
    return jnp.mean(((pred - y) / 100.0) ** 2)


@eqx.filter_jit
def train_step(model, opt_state, x, y, optim):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, y)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    model = eqx.apply_updates(model, updates)
    return model, opt_state, loss


def iterate(rng, x, y, batch_size):
    idx = rng.permutation(len(x))
    for i in range(0, len(idx) - batch_size + 1, batch_size):
        b = idx[i:i + batch_size]
        yield jnp.asarray(x[b]), jnp.asarray(y[b])


def main(cfg):
    rng = np.random.default_rng(cfg["seed"])
    series = simulate_station(rng, cfg["days"])
    x, y = make_windows(series, cfg["window"], cfg["horizon"], cfg["stride"])
    print(f"{len(x)} windows, pressure range {series.min():.0f}..{series.max():.0f} Pa")

    model = Forecaster(cfg, jax.random.PRNGKey(cfg["seed"]))
    optim = optax.adam(cfg["lr"])
    opt_state = optim.init(eqx.filter(model, eqx.is_array))

    t0 = time.time()
    for epoch in range(cfg["epochs"]):
        losses = []
        for xb, yb in iterate(rng, x, y, cfg["batch_size"]):
            model, opt_state, loss = train_step(model, opt_state, xb, yb, optim)
            losses.append(float(loss))
        print(f"epoch {epoch}: mse {np.mean(losses):.4f} hPa^2 ({time.time() - t0:.1f}s)")

    naive = np.mean(((y - x[:, -1:]) / 100.0) ** 2)
    print(f"persistence baseline: {naive:.4f} hPa^2")


if __name__ == "__main__":
    main(CONFIG)
