"""Origin: inf in forward of exp via hand-written log(sum(exp(logits))) in an NNX eval metric
Fix: compute the log-partition with jax.nn.logsumexp (max-subtracted) instead of jnp.log(jnp.sum(jnp.exp(logits))).
A Flax NNX classifier for raw (unnormalised, 0..255 ADC counts) spectrometer readings is trained
for a few steps with Optax's stable integer-label cross-entropy, and a pytest-style test then
checks a hand-written per-example negative log-likelihood metric, written as
log(sum(exp(logits))) - logits[label], against a float64 scipy.special.logsumexp reference
computed from the same logits. Because the inputs are not normalised, some logits exceed ~89,
exp overflows to inf in float32 and the metric becomes inf, while the float64 reference is finite:
np.testing.assert_allclose fails with an inf location mismatch.
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from scipy.special import logsumexp

N_CHANNELS, N_CLASSES, N_SAMPLES = 48, 6, 256


def make_spectra(seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, N_CLASSES, size=N_SAMPLES)
    peaks = rng.uniform(5, N_CHANNELS - 5, size=N_CLASSES)
    ch = np.arange(N_CHANNELS)[None, :]
    signal = 180.0 * np.exp(-0.5 * ((ch - peaks[labels][:, None]) / 2.5) ** 2)
    counts = signal + rng.uniform(20, 60, size=(N_SAMPLES, N_CHANNELS))
    return np.clip(counts, 0, 255).astype(np.float32), labels.astype(np.int32)


class SpectrumClassifier(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(N_CHANNELS, 64, rngs=rngs)
        self.out = nnx.Linear(64, N_CLASSES, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.hidden(x)))


def nll_metric(logits, labels):
    log_z = jnp.log(jnp.sum(jnp.exp(logits), axis=-1))
    return log_z - jnp.take_along_axis(logits, labels[:, None], axis=-1)[:, 0]


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(m):
        return optax.softmax_cross_entropy_with_integer_labels(m(x), y).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


@nnx.jit
def eval_step(model, x, y):
    logits = model(x)
    return logits, nll_metric(logits, y)


def test_nll_metric_matches_scipy_reference():
    x, y = make_spectra()
    model = SpectrumClassifier(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    for step in range(4):
        loss = train_step(model, optimizer, jnp.asarray(x), jnp.asarray(y))
        print(f"step {step}: loss={float(loss):.3f}")

    logits, nll = eval_step(model, jnp.asarray(x), jnp.asarray(y))
    logits64 = np.asarray(logits, dtype=np.float64)
    expected = logsumexp(logits64, axis=-1) - logits64[np.arange(len(y)), y]
    print("max |logit|:", float(jnp.abs(logits).max()))
    np.testing.assert_allclose(np.asarray(nll), expected, rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    test_nll_metric_matches_scipy_reference()
