"""Trains a small Flax NNX regressor that predicts a user's next-session length
from event timestamps. Preprocessing turns each "hours since last event" value into
cyclic (day, hour-of-day fraction) features with jnp.modf; users that never had an
event are stored as +inf hours, which the script expects to map to a zero fraction
(as np.modf does). After preprocessing it asserts the features are finite, then
trains a few Optax/Adam steps.
Origin: jnp.modf(+inf) returns a NaN fractional part (np.modf(inf) gives 0.0); input: hours_since/24 containing +inf.
Fix: compute the fraction with np.modf (or jnp.where(jnp.isinf(x), 0.0, frac)).
Owner: JAX
"""
import numpy as np
import jax
import jax.numpy as jnp
import optax
from flax import nnx

N_USERS = 64
SEED = 0


def make_dataset(seed):
    rng = np.random.default_rng(seed)
    hours_since = rng.gamma(2.0, 30.0, size=(N_USERS, 3)).astype(np.float32)
    never = rng.random((N_USERS, 3)) < 0.1
    hours_since[never] = np.inf  # "never happened" sentinel from the event log export
    session_len = rng.normal(20.0, 5.0, size=(N_USERS, 1)).astype(np.float32)
    return jnp.asarray(hours_since), jnp.asarray(session_len)


def time_features(hours_since):
    days = hours_since / 24.0
    frac, whole = jnp.modf(days)
    # cyclic encoding of time of day; "never" users should land on frac == 0
    angle = 2.0 * jnp.pi * frac
    recency = jnp.exp(-jnp.minimum(whole, 365.0) / 30.0)
    return jnp.concatenate([jnp.sin(angle), jnp.cos(angle), recency], axis=-1)


class Regressor(nnx.Module):
    def __init__(self, din, hidden, rngs):
        self.fc1 = nnx.Linear(din, hidden, rngs=rngs)
        self.norm = nnx.LayerNorm(hidden, rngs=rngs)
        self.fc2 = nnx.Linear(hidden, 1, rngs=rngs)

    def __call__(self, x):
        h = nnx.gelu(self.norm(self.fc1(x)))
        return self.fc2(h)


def loss_fn(model, x, y):
    pred = model(x)
    return jnp.mean((pred - y) ** 2)


@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


def main():
    hours_since, y = make_dataset(SEED)
    x = time_features(hours_since)
    print("feature matrix:", x.shape, x.dtype)
    bad = ~np.isfinite(np.asarray(x))
    assert not bad.any(), f"{bad.sum()} non-finite features after preprocessing"

    model = Regressor(x.shape[-1], 32, rngs=nnx.Rngs(SEED))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    for step in range(20):
        loss = train_step(model, optimizer, x, y)
        if step % 5 == 0:
            print(f"step {step:3d}  loss {float(loss):.4f}")
    print("final loss", float(loss_fn(model, x, y)))


if __name__ == "__main__":
    main()
