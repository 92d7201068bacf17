"""Mixture density network for urban taxi travel times.

A small Flax linen MLP maps trip features (haversine distance, pickup hour,
weekday, passenger count, a rush-hour flag) to the parameters of a
K-component Gaussian mixture over the trip duration in seconds.  Trip
durations are heavily multi-modal (free-flowing vs. congested traffic), which
is why we predict a full mixture instead of a single mean.

Training minimises the mixture negative log-likelihood with optax.adam inside
a jitted step.  Before the training loop gets going we make sure the very first
loss is a sane number; a bad first loss usually means the data pipeline is
broken and there is no point in burning the full schedule.
"""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

N_COMPONENTS = 5
HIDDEN = 64
BATCH = 128
N_TRIPS = 2048
STEPS = 200
LR = 3e-3
LOG_2PI = float(np.log(2.0 * np.pi))


def make_trips(n, seed=0):
    """Synthetic taxi trips: features plus a duration in seconds."""
    rng = np.random.default_rng(seed)
    distance_km = rng.gamma(shape=2.0, scale=3.0, size=n)
    hour = rng.integers(0, 24, size=n)
    weekday = rng.integers(0, 7, size=n)
    passengers = rng.integers(1, 5, size=n)
    rush = ((hour >= 7) & (hour <= 9)) | ((hour >= 16) & (hour <= 19))

    # free flow ~ 40 km/h, congested ~ 12 km/h, plus pickup overhead
    speed = np.where(rush & (rng.random(n) < 0.7), 12.0, 40.0)
    speed = speed * rng.lognormal(0.0, 0.15, size=n)
    duration_s = 3600.0 * distance_km / speed + rng.normal(180.0, 45.0, size=n)
    duration_s = np.clip(duration_s, 60.0, None)

    feats = np.stack([
        distance_km,
        np.sin(2 * np.pi * hour / 24), np.cos(2 * np.pi * hour / 24),
        np.sin(2 * np.pi * weekday / 7), np.cos(2 * np.pi * weekday / 7),
        passengers.astype(np.float64),
        rush.astype(np.float64),
    ], axis=1)
    return feats.astype(np.float32), duration_s.astype(np.float32)


class MDN(nn.Module):
    n_components: int = N_COMPONENTS
    hidden: int = HIDDEN

    @nn.compact
    def __call__(self, x):
        h = nn.tanh(nn.Dense(self.hidden)(x))
        h = nn.tanh(nn.Dense(self.hidden)(h))
        logits = nn.Dense(self.n_components, name="mix_logits")(h)
        mu = nn.Dense(self.n_components, name="means")(h)
        log_sigma = nn.Dense(self.n_components, name="log_scales")(h)
        log_sigma = jnp.clip(log_sigma, -5.0, 5.0)
        return logits, mu, log_sigma


def gaussian_logpdf(y, mu, log_sigma):
    z = (y - mu) * jnp.exp(-log_sigma)
    return -0.5 * z ** 2 - log_sigma - 0.5 * LOG_2PI


def mixture_nll(params, model, x, y):
    logits, mu, log_sigma = model.apply(params, x)
    log_w = jax.nn.log_softmax(logits, axis=-1)
    comp = gaussian_logpdf(y[:, None], mu, log_sigma)
    log_lik = jnp.log(jnp.exp(log_w + comp).sum(-1))
    return -jnp.mean(log_lik)


def main():
    feats, durations = make_trips(N_TRIPS)
    # standardise the inputs with training-set statistics
    mean, std = feats.mean(0), feats.std(0) + 1e-6
    feats = (feats - mean) / std

    model = MDN()
    params = model.init(jax.random.PRNGKey(0), feats[:1])
    optimizer = optax.adam(LR)
    opt_state = optimizer.init(params)

    @jax.jit
    def train_step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(mixture_nll)(params, model, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    rng = np.random.default_rng(1)
    n_params = sum(p.size for p in jax.tree_util.tree_leaves(params))
    print(f"MDN with {N_COMPONENTS} components, {n_params} parameters")
    print(f"durations: median {np.median(durations):.0f}s, "
          f"p95 {np.percentile(durations, 95):.0f}s")

    for step in range(STEPS):
        idx = rng.choice(N_TRIPS, size=BATCH, replace=False)
        params, opt_state, loss = train_step(
            params, opt_state, jnp.asarray(feats[idx]), jnp.asarray(durations[idx]))
        loss = float(loss)
        if step == 0:
            assert np.isfinite(loss), f"first loss is not finite: {loss}"
        if step % 50 == 0:
            print(f"step {step:4d}  nll {loss:.3f}")

    logits, mu, log_sigma = model.apply(params, jnp.asarray(feats[:4]))
    w = jax.nn.softmax(logits, axis=-1)
    pred = jnp.sum(w * mu, axis=-1)
    for p, t in zip(np.asarray(pred), durations[:4]):
        print(f"predicted {p:8.1f}s   actual {t:8.1f}s")


if __name__ == "__main__":
    main()
