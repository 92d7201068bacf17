"""Poisson GRU for hourly bike-share demand at docking stations.

Each training example is one station's history of hourly rental counts.
Stations come online at different times, so histories have different lengths;
they are right-padded to a common length and a boolean mask marks the real
hours.  A small Equinox GRU reads the weather covariates hour by hour and
predicts a Poisson intensity (rentals per docking-hour) for that hour.  The
expected count is intensity times exposure, where exposure is the fraction of
the hour the station was actually in service (stations often open
mid-hour).

The Poisson log-likelihood is only accumulated over observed hours; the data
loader hands us a boolean mask next to the exposure array.

Training uses optax.adamw in a jitted step.  Because the optimiser state is
easy to poison, the loop verifies every gradient leaf is finite before
applying an update.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

N_STATIONS = 32
MAX_HOURS = 48
N_COVARIATES = 4  # temperature, precipitation, hour-of-day sin/cos
HIDDEN = 16
STEPS = 30
LR = 1e-2


def make_dataset(seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(12, MAX_HOURS + 1, size=N_STATIONS)
    hours = np.arange(MAX_HOURS)
    temp = rng.normal(18.0, 6.0, size=(N_STATIONS, MAX_HOURS))
    rain = rng.exponential(0.3, size=(N_STATIONS, MAX_HOURS)) * (rng.random((N_STATIONS, MAX_HOURS)) < 0.2)
    phase = 2 * np.pi * (hours[None, :] % 24) / 24
    hsin = np.broadcast_to(np.sin(phase), (N_STATIONS, MAX_HOURS))
    hcos = np.broadcast_to(np.cos(phase), (N_STATIONS, MAX_HOURS))
    x = np.stack([(temp - 18.0) / 6.0, rain, hsin, hcos], axis=-1)

    base = rng.uniform(2.0, 10.0, size=(N_STATIONS, 1))
    rate = base * np.exp(0.3 * x[..., 0] - 1.5 * x[..., 1] + 0.5 * hsin)
    mask = hours[None, :] < lengths[:, None]
    exposure = np.where(mask, 1.0, 0.0)
    first = rng.random(N_STATIONS) < 0.5  # opened part-way through the first hour
    exposure[first, 0] = rng.uniform(0.2, 0.9, size=first.sum())
    counts = rng.poisson(rate * exposure).astype(np.float32)

    x = np.where(mask[..., None], x, 0.0)
    return x.astype(np.float32), counts, exposure.astype(np.float32), mask


class DemandModel(eqx.Module):
    cell: eqx.nn.GRUCell
    head: eqx.nn.Linear

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.cell = eqx.nn.GRUCell(N_COVARIATES, HIDDEN, key=k1)
        self.head = eqx.nn.Linear(HIDDEN, 1, key=k2)

    def __call__(self, xs, exposure, mask):
        def step(h, inp):
            x, m = inp
            h_new = self.cell(x, h)
            h = jnp.where(m, h_new, h)
            return h, jax.nn.softplus(self.head(h)[0])

        _, intensity = jax.lax.scan(step, jnp.zeros(HIDDEN), (xs, mask))
        return intensity * exposure  # expected rentals in each hour


def poisson_nll(model, xs, counts, exposure, mask):
    rates = jax.vmap(model)(xs, exposure, mask)
    log_rate = jnp.where(mask, jnp.log(rates), 0.0)
    ll = counts * log_rate - rates - jax.scipy.special.gammaln(counts + 1.0)
    return -jnp.sum(ll) / jnp.sum(mask)


def main():
    xs, counts, exposure, mask = map(jnp.asarray, make_dataset())
    print(f"{N_STATIONS} stations, {int(mask.sum())} observed station-hours "
          f"out of {mask.size}")

    model = DemandModel(jax.random.PRNGKey(42))
    optimizer = optax.adamw(LR, weight_decay=1e-4)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def compute_grads(model, xs, counts, exposure, mask):
        return eqx.filter_value_and_grad(poisson_nll)(model, xs, counts, exposure, mask)

    @eqx.filter_jit
    def apply(model, grads, opt_state):
        updates, opt_state = optimizer.update(
            grads, opt_state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), opt_state

    for step in range(STEPS):
        loss, grads = compute_grads(model, xs, counts, exposure, mask)
        assert all(jnp.all(jnp.isfinite(g)) for g in jax.tree_util.tree_leaves(grads)), \
            "non-finite gradients"
        model, opt_state = apply(model, grads, opt_state)
        if step % 10 == 0:
            print(f"step {step:3d}  poisson nll {float(loss):.4f}")

    rates = jax.vmap(model)(xs, exposure, mask)
    totals = np.asarray(rates.sum(axis=1))
    observed = np.asarray(counts.sum(axis=1))
    for i in range(3):
        print(f"station {i}: predicted {totals[i]:7.1f} rentals, observed {observed[i]:7.1f}")


if __name__ == "__main__":
    main()
