"""A Flax linen regressor trained with Optax under a choice of robust losses: absltest, one test per loss."""
from typing import Sequence

from absl.testing import absltest
from absl.testing import parameterized
import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

DELTA = 1.0


def mse(err):
    return jnp.mean(err ** 2)


def log_cosh(err):
    return jnp.mean(jnp.log(jnp.cosh(err)))


def huber(err):
    a = jnp.abs(err)
    if a.max() <= DELTA:  # every error is small: the loss is plain quadratic
        return jnp.mean(0.5 * err ** 2)
    return jnp.mean(jnp.where(a <= DELTA, 0.5 * err ** 2, DELTA * (a - 0.5 * DELTA)))


class Regressor(nn.Module):
    features: Sequence[int] = (16, 16)

    @nn.compact
    def __call__(self, x):
        for f in self.features:
            x = nn.tanh(nn.Dense(f)(x))
        return nn.Dense(1)(x)[..., 0]


class LossTest(parameterized.TestCase):

    def setUp(self):
        super().setUp()
        self.x = jax.random.normal(jax.random.key(1), (64, 3))
        self.y = jnp.sin(self.x[:, 0]) + 0.1 * self.x[:, 1] ** 2
        self.model = Regressor()
        self.params = self.model.init(jax.random.key(0), self.x)["params"]

    @parameterized.named_parameters(("mse", mse), ("log_cosh", log_cosh), ("huber", huber))
    def test_training_reduces_loss(self, loss):
        model, x, y = self.model, self.x, self.y
        optimizer = optax.adam(1e-2)

        def objective(params):
            return loss(model.apply({"params": params}, x) - y)

        @jax.jit
        def step(params, opt_state):
            value, grads = jax.value_and_grad(objective)(params)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, value

        params, opt_state = self.params, optimizer.init(self.params)
        first = objective(params)
        for _ in range(10):
            params, opt_state, value = step(params, opt_state)
        self.assertLess(float(objective(params)), float(first))

    @parameterized.parameters(mse, log_cosh, huber)
    def test_loss_of_zero_error_is_zero(self, loss):
        self.assertEqual(float(loss(jnp.zeros(4))), 0.0)


if __name__ == "__main__":
    absltest.main()
