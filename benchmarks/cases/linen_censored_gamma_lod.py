"""Gamma regression for trace-metal concentrations with a lab detection limit.

Samples whose concentration is below the lab's limit of detection (LOD) come
back as "<LOD", so they are left-censored and contribute log P(Y < LOD) to
the likelihood instead of the density.
"""
import time

import jax
import jax.numpy as jnp
import flax.linen as nn
import optax
from jax.scipy.stats import gamma

LOD = 1.0  # ug/L
N_SAMPLES, N_FEATURES = 2048, 6
BATCH_SIZE, N_STEPS, LOG_EVERY = 256, 300, 50


def make_dataset(key, n=N_SAMPLES):
    k_x, k_w, k_y = jax.random.split(key, 3)
    # standardised covariates: depth, pH, distance to outfall, flow, temp, turbidity
    x = jax.random.normal(k_x, (n, N_FEATURES))
    w_true = jax.random.normal(k_w, (N_FEATURES,)) * 0.5
    mean = jnp.exp(jnp.log(20.0) + x @ w_true)
    shape = 60.0  # replicate CV ~ 13%
    y = jax.random.gamma(k_y, shape, (n,)) * mean / shape
    censored = y < LOD
    y = jnp.where(censored, LOD, y)
    return x, y, censored


class ConcentrationModel(nn.Module):
    hidden: int = 64
    log_mean_init: float = 0.0

    @nn.compact
    def __call__(self, x):
        h = nn.gelu(nn.Dense(self.hidden)(x))
        h = nn.gelu(nn.Dense(self.hidden)(h))
        log_mean = nn.Dense(1, bias_init=nn.initializers.constant(self.log_mean_init))(h)[..., 0]
        # replicate analyses put the shape somewhere around 60
        log_shape = nn.Dense(1, kernel_init=nn.initializers.zeros,
                             bias_init=nn.initializers.constant(jnp.log(60.0)))(h)[..., 0]
        return jnp.exp(log_mean), jnp.exp(log_shape)


def censored_gamma_nll(mean, shape, y, censored):
    scale = mean / shape
    ll_obs = gamma.logpdf(y, shape, scale=scale)
    ll_cens = gamma.logcdf(LOD, shape, scale=scale)
    ll = jnp.where(censored, ll_cens, ll_obs)
    return -jnp.mean(ll)


def batches(key, x, y, c, batch_size):
    perm = jax.random.permutation(key, x.shape[0])
    for i in range(0, x.shape[0] - batch_size + 1, batch_size):
        idx = perm[i:i + batch_size]
        yield x[idx], y[idx], c[idx]


optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(3e-3, weight_decay=1e-4))


def make_train_step(model):
    @jax.jit
    def train_step(params, opt_state, x, y, c):
        def loss_fn(p):
            mean, shape = model.apply(p, x)
            return censored_gamma_nll(mean, shape, y, c)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return train_step


def evaluate(model, params, x, y, c):
    mean, shape = model.apply(params, x)
    nll = censored_gamma_nll(mean, shape, y, c)
    rel_err = jnp.sum(jnp.abs(mean - y) / y * ~c) / jnp.maximum(jnp.sum(~c), 1)
    return nll, rel_err


def main():
    key = jax.random.PRNGKey(42)
    k_data, k_init, k_loop = jax.random.split(key, 3)
    x, y, c = make_dataset(k_data)
    n_train = int(0.8 * N_SAMPLES)
    train, test = (x[:n_train], y[:n_train], c[:n_train]), (x[n_train:], y[n_train:], c[n_train:])
    print(f"{N_SAMPLES} samples, {float(c.mean()):.1%} reported as <LOD ({LOD} ug/L)")

    # start the mean head at the log of the average detected concentration
    model = ConcentrationModel(log_mean_init=float(jnp.log(jnp.mean(y[~c]))))
    train_step = make_train_step(model)
    params = model.init(k_init, x[:1])
    opt_state = optimizer.init(params)
    step, t0 = 0, time.time()
    while step < N_STEPS:
        k_loop, k_epoch = jax.random.split(k_loop)
        for xb, yb, cb in batches(k_epoch, *train, BATCH_SIZE):
            params, opt_state, loss = train_step(params, opt_state, xb, yb, cb)
            if step % LOG_EVERY == 0:
                print(f"step {step:4d}  train nll {float(loss):9.4f}  ({time.time() - t0:.1f}s)")
            step += 1
            if step >= N_STEPS:
                break

    test_nll, test_rel = evaluate(model, params, *test)
    print(f"test nll {float(test_nll):.4f}  mean relative error (detects) {float(test_rel):.3f}")
    assert jnp.isfinite(loss), f"training loss is not finite: {loss}"
    assert jnp.isfinite(test_nll), f"test nll is not finite: {test_nll}"


if __name__ == "__main__":
    main()
