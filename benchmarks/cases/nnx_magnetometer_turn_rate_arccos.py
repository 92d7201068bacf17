"""Estimate a vehicle's yaw rate from raw 1 kHz magnetometer windows (Flax NNX).

The model turns raw field vectors into unit headings, measures the angle swept
between consecutive samples with arccos(u_t . u_{t+1}) and regresses the rate.
"""
import numpy as np
import jax
import jax.numpy as jnp
import optax
from flax import nnx

DT = 1e-3          # 1 kHz IMU
T = 32
N = 256


def make_windows(seed=42):
    rng = np.random.default_rng(seed)
    yaw0 = rng.uniform(-np.pi, np.pi, size=(N, 1))
    rate = rng.uniform(0.02, 0.6, size=(N, 1))                   # rad/s, slow manoeuvres
    tilt = rng.uniform(0.9, 1.2, size=(N, 1))                    # magnetic inclination
    yaw = yaw0 + rate * DT * np.arange(T)
    field = 48.0 * np.stack([np.cos(yaw) * np.cos(tilt),
                             np.sin(yaw) * np.cos(tilt),
                             np.broadcast_to(np.sin(tilt), yaw.shape)], axis=-1)   # uT
    return field, np.degrees(rate)


class TurnRateNet(nnx.Module):
    def __init__(self, hidden, rngs):
        self.fc1 = nnx.Linear(T - 1, hidden, rngs=rngs)
        self.fc2 = nnx.Linear(hidden, 1, rngs=rngs)

    def __call__(self, field):
        u = field / jnp.linalg.norm(field, axis=-1, keepdims=True)
        cos_step = jnp.sum(u[:, 1:] * u[:, :-1], axis=-1)
        swept = jnp.degrees(jnp.arccos(cos_step)) / DT          # deg/s per step
        h = nnx.relu(self.fc1(swept / 30.0))
        return self.fc2(h)


def train(epochs=30, batch=64):
    field, rate_deg = make_windows()
    field, rate_deg = jnp.asarray(field), jnp.asarray(rate_deg)
    model = TurnRateNet(32, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(3e-3), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, xb, yb):
        def loss_fn(model):
            return jnp.mean((model(xb) - yb) ** 2)
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    for epoch in range(epochs):
        for i in range(0, N, batch):
            loss = train_step(model, optimizer, field[i:i + batch], rate_deg[i:i + batch])
            if jnp.isnan(loss):
                raise ValueError(f"NaN loss at epoch {epoch}, batch {i // batch}")
        if epoch % 10 == 0:
            print(f"epoch {epoch:2d}  mse {float(loss):.3f}")
    return model


if __name__ == "__main__":
    train()
    print("training finished")
