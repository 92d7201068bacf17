"""Fit an exponential inter-arrival-time model for detector hits with Flax + Optax.

Detector timestamps are quantized to 1 ns, so pairs of hits with identical
timestamps are only known to have a gap < 1 ns: those rows are left-censored
and contribute log P(T <= 1 ns) = expon.logcdf to the likelihood.
"""
import numpy as np
import jax
import jax.numpy as jnp
import flax.linen as nn
import optax
from jax.scipy.stats import expon

CLOCK_RES = 1e-9  # seconds


def make_data(n=512, seed=0):
    rng = np.random.default_rng(seed)
    feats = rng.normal(size=(n, 4)).astype(np.float32)       # threshold, HV, temp, rate setting
    true_log_scale = np.log(0.05) + feats @ np.array([0.3, -0.2, 0.1, 0.05])
    gaps = rng.exponential(np.exp(true_log_scale)).astype(np.float32)
    gaps = np.round(gaps / CLOCK_RES) * CLOCK_RES
    censored = gaps < CLOCK_RES
    gaps = np.where(censored, CLOCK_RES, gaps).astype(np.float32)
    # a handful of pile-up events always end up in the same clock tick
    censored[:8] = True
    gaps[:8] = CLOCK_RES
    return jnp.asarray(feats), jnp.asarray(gaps), jnp.asarray(censored)


class ScaleNet(nn.Module):
    hidden: int = 32

    @nn.compact
    def __call__(self, x):
        h = nn.gelu(nn.Dense(self.hidden)(x))
        h = nn.gelu(nn.Dense(self.hidden)(h))
        log_scale = nn.Dense(1, bias_init=nn.initializers.constant(np.log(0.05)))(h)
        return jnp.exp(log_scale[:, 0])


def nll(params, model, x, t, cens):
    scale = model.apply(params, x)
    ll_obs = expon.logpdf(t, scale=scale)
    ll_cens = expon.logcdf(t, scale=scale)
    return -jnp.mean(jnp.where(cens, ll_cens, ll_obs))


def main():
    x, t, cens = make_data()
    print(f"{int(cens.sum())} left-censored gaps out of {len(t)}")
    model = ScaleNet()
    params = model.init(jax.random.PRNGKey(0), x)
    opt = optax.adam(3e-3)
    opt_state = opt.init(params)

    @jax.jit
    def step(params, opt_state):
        loss, grads = jax.value_and_grad(nll)(params, model, x, t, cens)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    for i in range(200):
        params, opt_state, loss = step(params, opt_state)
        assert jnp.isfinite(loss), f"non-finite NLL at step {i}: {loss}"
        if i % 50 == 0:
            print(f"step {i:4d}  nll {float(loss):.4f}")
    print("mean fitted scale:", float(model.apply(params, x).mean()))


if __name__ == "__main__":
    main()
