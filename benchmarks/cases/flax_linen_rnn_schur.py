"""A linear recurrent network in Flax linen whose recurrence matrix is kept stable by penalising its
spectral radius, read off the Schur form; trained with Optax (gradients by JAX)."""
from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

HIDDEN = 6


class StableRNN(nn.Module):
    hidden: int = HIDDEN
    readout: Sequence[int] = (8, 1)

    def setup(self):
        self.recurrence = self.param("recurrence", nn.initializers.orthogonal(0.9), (self.hidden, self.hidden))
        self.encode = nn.Dense(self.hidden)
        self.head = [nn.Dense(n) for n in self.readout]

    def spectral_radius(self):
        schur_form, _ = jax.scipy.linalg.schur(self.recurrence)
        return jnp.max(jnp.abs(jnp.diag(schur_form)))

    def __call__(self, inputs):
        def step(h, x):
            h = jnp.tanh(h @ self.recurrence + self.encode(x))
            return h, h

        h0 = jnp.zeros((inputs.shape[0], self.hidden))
        h, _ = jax.lax.scan(step, h0, jnp.swapaxes(inputs, 0, 1))
        for layer in self.head[:-1]:
            h = nn.relu(layer(h))
        return self.head[-1](h)[:, 0], self.spectral_radius()


def loss_fn(params, model, x, y):
    pred, radius = model.apply({"params": params}, x)
    return jnp.mean((pred - y) ** 2) + 0.1 * jax.nn.relu(radius - 1.0)


def make_step(model, optimizer):
    @jax.jit
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, model, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss
    return step


def main():
    model = StableRNN()
    x = jax.random.normal(jax.random.key(3), (16, 10, 2))
    y = x[:, :, 0].sum(axis=1) - x[:, -1, 1]
    params = model.init(jax.random.key(0), x)["params"]
    optimizer = optax.sgd(1e-2, momentum=0.9)
    opt_state = optimizer.init(params)
    step = make_step(model, optimizer)
    for i in range(3):
        params, opt_state, loss = step(params, opt_state, x, y)
        print(i, loss)


if __name__ == "__main__":
    main()
