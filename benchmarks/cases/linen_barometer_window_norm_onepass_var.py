"""Predict short-term altitude change from windows of raw barometer readings.

Each sample is a window of 64 pressure readings in Pa (~101 kPa).  The model
standardises every window on the fly (per-window instance norm) before an MLP.
"""
import numpy as np
import jax
import jax.numpy as jnp
import flax.linen as nn
import optax

WINDOW = 64
N_SAMPLES = 512


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    base = rng.uniform(99_000.0, 103_000.0, size=(N_SAMPLES, 1))    # station pressure, Pa
    drift = rng.normal(0.0, 2.0, size=(N_SAMPLES, 1)) * np.linspace(0, 1, WINDOW)
    noise = rng.normal(0.0, 0.5, size=(N_SAMPLES, WINDOW))
    x = base + drift + noise
    # a few sensors froze and keep reporting the same value
    stuck = rng.choice(N_SAMPLES, size=16, replace=False)
    x[stuck] = base[stuck]
    y = -8.3 * drift[:, -1:]        # altitude change in cm (~8.3 cm per Pa near sea level)
    return x, y


class WindowNorm(nn.Module):
    eps: float = 1e-5

    @nn.compact
    def __call__(self, x):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        mean_sq = jnp.mean(x * x, axis=-1, keepdims=True)
        var = mean_sq - mean ** 2                # single pass, saves a reduction
        scale = self.param("scale", nn.initializers.ones, (1,))
        return scale * (x - mean) / jnp.sqrt(var + self.eps)


class AltitudeNet(nn.Module):
    hidden: int = 64

    @nn.compact
    def __call__(self, x):
        x = WindowNorm()(x)
        x = nn.gelu(nn.Dense(self.hidden)(x))
        x = nn.gelu(nn.Dense(self.hidden)(x))
        return nn.Dense(1)(x)


def main():
    x, y = make_data()
    x, y = jnp.asarray(x), jnp.asarray(y)
    model = AltitudeNet()
    params = model.init(jax.random.PRNGKey(0), x[:1])
    tx = optax.adamw(1e-3, weight_decay=1e-4)
    opt_state = tx.init(params)

    @jax.jit
    def train_step(params, opt_state, xb, yb):
        def loss_fn(p):
            pred = model.apply(p, xb)
            return jnp.mean((pred - yb) ** 2)
        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    batch = 128
    for step in range(40):
        i = (step * batch) % N_SAMPLES
        params, opt_state, loss = train_step(params, opt_state, x[i:i + batch], y[i:i + batch])
        assert jnp.isfinite(loss), f"non-finite loss {loss} at step {step}"
        if step % 10 == 0:
            print(f"step {step:3d}  loss {float(loss):.4f}")
    print("done, final loss", float(loss))


if __name__ == "__main__":
    main()
