"""Origin: +inf in forward of cosh via jnp.cosh (the hand-written log-cosh jnp.log(jnp.cosh(s)))
Fix: compute log-cosh stably: jnp.logaddexp(s, -s) - jnp.log(2.0) (or jnp.abs(s) + jnp.log1p(jnp.exp(-2 * jnp.abs(s))) - jnp.log(2.0)).

An Equinox infomax-ICA model for multi-channel EEG: a square unmixing matrix (an `eqx.nn.Linear`
without bias) maps electrode voltages to sources with a sech prior, p(s) = 1 / (pi cosh s), so the
per-sample negative log-likelihood is sum(log cosh s) - log|det W| + n log pi. The pytest-style test
checks the jitted, vmapped NLL against a float64 NumPy port that uses the stable
`np.logaddexp(s, -s) - log 2`. The recording goes in raw microvolts rather than whitened, and the
eye-blink artefacts (hundreds of microvolts on the frontal channels) push some sources past |s| ~ 89:
float32 `jnp.cosh` overflows to +inf there, the NLL of those samples is +inf where NumPy's is finite,
and `np.testing.assert_allclose` fails before the fitting test ever runs.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

N_CHANNELS, RATE = 8, 256  # electrodes, samples per second


def logcosh(s):
    return jnp.log(jnp.cosh(s))


class InfomaxICA(eqx.Module):
    unmix: eqx.nn.Linear

    def __init__(self, n_channels, *, key):
        self.unmix = eqx.nn.Linear(n_channels, n_channels, use_bias=False, key=key)

    def sources(self, x):
        return self.unmix(x)

    def nll(self, x):
        s = self.sources(x)
        _, logdet = jnp.linalg.slogdet(self.unmix.weight)
        return jnp.sum(logcosh(s)) - logdet + s.shape[0] * jnp.log(jnp.pi)


def make_recording(seconds, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(seconds * RATE) / RATE
    alpha = 20.0 * np.sin(2 * np.pi * 10.0 * t)                      # occipital alpha, uV
    mu = 12.0 * np.sign(np.sin(2 * np.pi * 11.5 * t + 1.0))           # motor mu rhythm
    noise = rng.laplace(0.0, 8.0, (5, t.size))                         # background activity
    blinks = np.zeros_like(t)
    for onset in rng.uniform(0, seconds - 0.4, seconds // 2):          # ~one blink per 2 s
        blinks += 250.0 * np.exp(-0.5 * ((t - onset - 0.2) / 0.05) ** 2)
    sources = np.stack([alpha, mu, blinks, *noise])
    mixing = rng.normal(0.0, 1.0, (N_CHANNELS, N_CHANNELS))
    mixing[:3, 2] = np.abs(mixing[:3, 2]) + 1.0                        # blinks dominate Fp1, Fp2, Fz
    return (mixing @ sources).T.astype(np.float32)


@eqx.filter_jit
def batched_nll(model, x):
    return jax.vmap(model.nll)(x)


def numpy_nll(model, x):
    w = np.asarray(model.unmix.weight, dtype=np.float64)
    s = x.astype(np.float64) @ w.T
    logcosh_s = np.logaddexp(s, -s) - np.log(2.0)
    return logcosh_s.sum(axis=1) - np.linalg.slogdet(w)[1] + w.shape[0] * np.log(np.pi)


def fit(model, x, steps=200, lr=1e-2):
    optimizer = optax.adam(lr)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def step(model, opt_state):
        loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean(batched_nll(m, x)))(model)
        updates, opt_state = optimizer.update(grads, opt_state)
        return eqx.apply_updates(model, updates), opt_state, loss

    for _ in range(steps):
        model, opt_state, loss = step(model, opt_state)
    return model, loss


def test_nll_matches_numpy_reference():
    model = InfomaxICA(N_CHANNELS, key=jax.random.PRNGKey(0))
    x = make_recording(seconds=8)
    got = np.asarray(batched_nll(model, jnp.asarray(x)))
    np.testing.assert_allclose(got, numpy_nll(model, x), rtol=1e-4, atol=1e-3)


def test_fit_lowers_nll():
    model = InfomaxICA(N_CHANNELS, key=jax.random.PRNGKey(0))
    x = jnp.asarray(make_recording(seconds=8))
    before = float(jnp.mean(batched_nll(model, x)))
    model, after = fit(model, x)
    assert after < before, f"NLL went from {before:.3f} to {float(after):.3f}"


if __name__ == "__main__":
    test_nll_matches_numpy_reference()
    test_fit_lowers_nll()
    print("all tests passed")
