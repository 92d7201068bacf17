"""Tests for the land-cover pixel classifier's loss.

The classifier is a small Flax NNX MLP that labels Sentinel-2 pixels
(10 spectral bands, surface reflectance) as one of six land-cover classes:
water, forest, cropland, grassland, urban, bare soil.  Its loss is a plain
softmax cross-entropy written out from the definition so it reads the same as
the formula in the methods section of the paper.

Downstream the logits are temperature-scaled: the calibration step fits a
temperature on a validation split and the distillation pipeline sharpens the
teacher with a small temperature.  This test trains the model briefly and
then checks the loss on the scaled logits, for every temperature we use,
against an independent float64 SciPy reference.

Run with pytest, or directly as a script.
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from scipy.special import log_softmax as scipy_log_softmax

N_BANDS = 10
CLASSES = ["water", "forest", "cropland", "grassland", "urban", "bare"]
TEMPERATURES = (1.0, 0.5, 0.1, 0.02)


def make_pixels(n, seed):
    """Reflectance spectra: class-specific mean spectrum plus noise."""
    class_means = np.random.default_rng(1234).uniform(0.02, 0.45, size=(len(CLASSES), N_BANDS))
    class_means[0, 6:] = 0.01          # water absorbs the near-infrared bands
    class_means[1, 6:8] = 0.55         # vegetation red edge
    class_means[2, 6:8] = 0.40
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(CLASSES), size=n)
    spectra = class_means[labels] + rng.normal(0.0, 0.08, size=(n, N_BANDS))
    return np.clip(spectra, 0.0, 1.0).astype(np.float32), labels.astype(np.int32)


class PixelClassifier(nnx.Module):
    def __init__(self, rngs: nnx.Rngs, hidden=64):
        self.fc1 = nnx.Linear(N_BANDS, hidden, rngs=rngs)
        self.fc2 = nnx.Linear(hidden, hidden, rngs=rngs)
        self.out = nnx.Linear(hidden, len(CLASSES), rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.fc1(x))
        h = nnx.relu(self.fc2(h))
        return self.out(h)


def cross_entropy(logits, label):
    """-log p(label | x) with p = softmax(logits)."""
    return -jnp.log(jnp.exp(logits[label]) / jnp.sum(jnp.exp(logits)))


def mean_cross_entropy(logits, labels):
    return jnp.mean(jax.vmap(cross_entropy)(logits, labels))


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return mean_cross_entropy(model(x), y)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


@nnx.jit
def scaled_loss(model, x, y, temperature):
    return mean_cross_entropy(model(x) / temperature, y)


def reference_loss(logits, labels, temperature):
    z = np.asarray(logits, dtype=np.float64) / temperature
    logp = scipy_log_softmax(z, axis=-1)
    return -np.mean(logp[np.arange(len(labels)), labels])


def standardise(x, mean, std):
    return (x - mean) / std


def test_cross_entropy_matches_reference():
    x_train, y_train = make_pixels(1024, seed=0)
    x_val, y_val = make_pixels(256, seed=1)
    mean, std = x_train.mean(0), x_train.std(0) + 1e-6
    x_train = standardise(x_train, mean, std)
    x_val = standardise(x_val, mean, std)

    model = PixelClassifier(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

    rng = np.random.default_rng(2)
    for step in range(150):
        idx = rng.choice(len(x_train), size=128, replace=False)
        loss = train_step(model, optimizer, jnp.asarray(x_train[idx]), jnp.asarray(y_train[idx]))
    print(f"final training loss {float(loss):.4f}")

    logits = model(jnp.asarray(x_val))
    acc = float(jnp.mean(jnp.argmax(logits, -1) == y_val))
    print(f"validation accuracy {acc:.3f}, max |logit| {float(jnp.abs(logits).max()):.1f}")

    for t in TEMPERATURES:
        got = scaled_loss(model, jnp.asarray(x_val), jnp.asarray(y_val), t)
        want = reference_loss(logits, y_val, t)
        print(f"T={t:<5}  jax {float(got):.6f}  scipy {want:.6f}")
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5,
                                   err_msg=f"cross-entropy mismatch at temperature {t}")


if __name__ == "__main__":
    test_cross_entropy_matches_reference()
