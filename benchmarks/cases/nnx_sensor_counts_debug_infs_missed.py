"""Origin: JAX 0.10.2's Inf check is lost for the thread once tracing the gradient through `nnx.relu`
(JAX's own `debug_nans(False)` block in `jaxpr_as_fun`) ends; the glitched batch's Inf is not stopped.
Fix (JAX's): the check kept as documented; the program then rejects the batch and runs through.

Poisson regression of event counts from sensor readings with Flax NNX + Optax.

Raw sensor streams occasionally glitch (a reading spikes by several orders of
magnitude). With ``jax_debug_infs`` enabled, a glitched batch overflows the
Poisson rate to +inf, the jitted step raises ``FloatingPointError`` and the
training loop drops that batch. At the end we check that the glitched batch
was indeed rejected.
"""
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

jax.config.update("jax_debug_infs", True)


@dataclass(frozen=True)
class Config:
    seed: int = 7
    n_sensors: int = 10
    hidden: int = 48
    batch_size: int = 64
    n_batches: int = 30
    lr: float = 2e-3
    dropout: float = 0.1
    glitch_batch: int = 11
    glitch_scale: float = 1e4
    log_every: int = 5


CFG = Config()


# ----------------------------------------------------------------------------
# synthetic data
# ----------------------------------------------------------------------------
def make_stream(cfg: Config):
    rng = np.random.default_rng(cfg.seed)
    w = rng.normal(scale=0.4, size=(cfg.n_sensors,))
    n = cfg.batch_size * cfg.n_batches
    x = rng.normal(size=(n, cfg.n_sensors)).astype(np.float32)
    counts = rng.poisson(np.exp(0.8 + x @ w)).astype(np.float32)
    # sensor glitch: one reading in one batch spikes
    gi = cfg.glitch_batch * cfg.batch_size + 17
    x[gi, 3] *= cfg.glitch_scale
    x[gi, 3] = abs(x[gi, 3])
    return x, counts


def batches(x, y, bs):
    for i in range(0, len(x), bs):
        yield jnp.asarray(x[i:i + bs]), jnp.asarray(y[i:i + bs])


# ----------------------------------------------------------------------------
# model
# ----------------------------------------------------------------------------
class CountRegressor(nnx.Module):
    def __init__(self, n_in: int, hidden: int, dropout: float, *, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(n_in, hidden, rngs=rngs)
        self.fc2 = nnx.Linear(hidden, hidden, rngs=rngs)
        self.drop = nnx.Dropout(dropout, rngs=rngs)
        self.head = nnx.Linear(hidden, 1, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.fc1(x))
        h = self.drop(nnx.relu(self.fc2(h)))
        return self.head(h)[:, 0]  # log-rate


def poisson_nll(log_rate, counts):
    return jnp.mean(jnp.exp(log_rate) - counts * log_rate)


@nnx.jit
def train_step(model: CountRegressor, optimizer: nnx.Optimizer, metrics: nnx.MultiMetric, x, y):
    def loss_fn(m):
        return poisson_nll(m(x), y)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    metrics.update(loss=loss)
    return loss


@nnx.jit
def eval_step(model: CountRegressor, x, y):
    log_rate = model(x)
    return poisson_nll(log_rate, y), jnp.mean(jnp.abs(jnp.exp(log_rate) - y))


def main(cfg: Config = CFG):
    t0 = time.time()
    x, y = make_stream(cfg)
    model = CountRegressor(cfg.n_sensors, cfg.hidden, cfg.dropout, rngs=nnx.Rngs(cfg.seed))
    optimizer = nnx.Optimizer(
        model,
        optax.chain(optax.clip_by_global_norm(5.0), optax.adam(cfg.lr)),
        wrt=nnx.Param,
    )
    metrics = nnx.MultiMetric(loss=nnx.metrics.Average("loss"))

    rejected = []
    model.train()
    for step, (xb, yb) in enumerate(batches(x, y, cfg.batch_size)):
        try:
            train_step(model, optimizer, metrics, xb, yb)
        except FloatingPointError:
            print(f"step {step:2d}: overflow in loss -> batch rejected")
            rejected.append(step)
            continue
        if step % cfg.log_every == 0:
            print(f"step {step:2d}: running loss {float(metrics.compute()['loss']):.4f}")
            metrics.reset()

    model.eval()
    x_val = jnp.asarray(np.random.default_rng(cfg.seed + 1).normal(size=(256, cfg.n_sensors)),
                        dtype=jnp.float32)
    val_loss, val_mae = eval_step(model, x_val, jnp.ones(256))
    print(f"eval: nll={float(val_loss):.4f} mae={float(val_mae):.4f} "
          f"rejected={rejected} ({time.time() - t0:.1f}s)")

    if cfg.glitch_batch not in rejected:
        raise RuntimeError(
            f"glitched batch {cfg.glitch_batch} was not rejected by jax_debug_infs "
            f"(rejected={rejected}); model parameters are corrupted")
    print("OK")


if __name__ == "__main__":
    main()
