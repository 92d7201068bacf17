"""Quadratic drift model of a temperature sensor, fitted with JAX's own example optimizers (the
stax-era `opt_init, opt_update, get_params`), its epochs shown by rich's `track`. The step size is
given negative, as if the library wanted the descent's sign written out, so every update climbs the
loss and the check after training fails."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.example_libraries import optimizers
from rich.progress import track

LEARNING_RATE = 0.05
EPOCHS = 30


def features(t):
    return jnp.stack([jnp.ones_like(t), t, t ** 2], axis=1)


def loss_fn(w, t, y):
    return jnp.mean((features(t) @ w - y) ** 2)


def main():
    rng = np.random.default_rng(3)
    t = jnp.asarray(np.linspace(-1.0, 1.0, 64), jnp.float32)
    y = 0.3 + 1.2 * t - 0.7 * t ** 2 + 0.05 * jnp.asarray(rng.normal(size=64), jnp.float32)
    opt_init, opt_update, get_params = optimizers.momentum(-LEARNING_RATE, mass=0.9)
    opt_state = opt_init(jnp.zeros(3))
    step = jax.jit(lambda i, s: opt_update(i, jax.grad(loss_fn)(get_params(s), t, y), s))
    losses = []
    for epoch in track(range(EPOCHS), description="fitting drift"):
        opt_state = step(epoch, opt_state)
        losses.append(float(loss_fn(get_params(opt_state), t, y)))
    assert losses[-1] < losses[0], f"training diverged: {losses[0]:.3f} -> {losses[-1]:.3f}"
    print("drift coefficients:", get_params(opt_state))


if __name__ == "__main__":
    main()
