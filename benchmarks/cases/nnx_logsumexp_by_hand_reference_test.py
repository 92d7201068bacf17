"""Weather-regime classifier on raw station readings (Flax NNX + Optax).

The model scores K weather regimes from the raw sensor vector
(pressure [Pa], temperature [K], relative humidity [%], wind [m/s]).
We need the log-partition function log Z(x) = log sum_k exp(f_k(x)) both
for the cross-entropy loss and as a free-energy anomaly score, and we check
it against SciPy's float64 implementation.
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from scipy.special import logsumexp as scipy_logsumexp

N_FEATURES = 4
N_REGIMES = 6
HIDDEN = 32


class RegimeClassifier(nnx.Module):
    def __init__(self, n_in, n_hidden, n_out, *, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(n_in, n_hidden, rngs=rngs)
        self.head = nnx.Linear(n_hidden, n_out, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.hidden(x))
        return self.head(h)


def log_partition(logits):
    # log Z = log sum_k exp(logit_k)
    return jnp.log(jnp.sum(jnp.exp(logits), axis=-1))


def free_energy(model, x):
    """Anomaly score: -log Z(x). Low values = confidently in-distribution."""
    return -log_partition(model(x))


def cross_entropy(model, x, y):
    logits = model(x)
    picked = jnp.take_along_axis(logits, y[:, None], axis=-1)[:, 0]
    return jnp.mean(log_partition(logits) - picked)


def make_station_data(n, seed=0):
    rng = np.random.default_rng(seed)
    pressure = rng.normal(101325.0, 900.0, size=n)  # Pa, as logged by the barometer
    temperature = rng.normal(288.0, 7.0, size=n)    # K
    humidity = rng.uniform(20.0, 100.0, size=n)     # %
    wind = rng.gamma(2.0, 3.0, size=n)              # m/s
    x = np.stack([pressure, temperature, humidity, wind], axis=1)
    # crude regime labels from thresholds on the physical quantities
    y = (
        (pressure < 100500).astype(int)
        + 2 * (humidity > 75).astype(int)
        + (wind > 10).astype(int)
    ) % N_REGIMES
    return x.astype(np.float32), y.astype(np.int32)


@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(cross_entropy)(model, x, y)
    optimizer.update(model, grads)
    return loss


def fit(model, x, y, steps=50, lr=1e-3):
    optimizer = nnx.Optimizer(model, optax.adam(lr), wrt=nnx.Param)
    losses = []
    for _ in range(steps):
        losses.append(float(train_step(model, optimizer, x, y)))
    return losses


def test_log_partition_matches_scipy():
    model = RegimeClassifier(N_FEATURES, HIDDEN, N_REGIMES, rngs=nnx.Rngs(0))
    x, _ = make_station_data(256, seed=1)
    logits = model(jnp.asarray(x))
    got = np.asarray(log_partition(logits))
    want = scipy_logsumexp(np.asarray(logits, dtype=np.float64), axis=-1)
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_training_reduces_loss():
    model = RegimeClassifier(N_FEATURES, HIDDEN, N_REGIMES, rngs=nnx.Rngs(0))
    x, y = make_station_data(512, seed=2)
    losses = fit(model, jnp.asarray(x), jnp.asarray(y))
    assert np.isfinite(losses[-1]), f"final loss is {losses[-1]}"
    assert losses[-1] < losses[0], f"loss went {losses[0]:.3f} -> {losses[-1]:.3f}"


if __name__ == "__main__":
    test_log_partition_matches_scipy()
    test_training_reduces_loss()
    print("all tests passed")
