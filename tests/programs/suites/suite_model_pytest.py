"""A small pytest suite for a linear model: two tests pass, test_step fails (a while_loop under jax.grad)."""
import jax
import jax.numpy as jnp
import pytest

LEARNING_RATE = 0.1


def predict(w, x):
    return x @ w


def loss(w, x, y):
    return jnp.mean((predict(w, x) - y) ** 2)


def clipped_norm(g, limit=1.0):
    # shrink the gradient until its norm is under the limit
    return jax.lax.while_loop(lambda v: jnp.linalg.norm(v) > limit, lambda v: v * 0.5, g)


@pytest.fixture
def weights():
    w = jnp.zeros(3)
    yield w


@pytest.fixture
def unused_table():
    raise RuntimeError("this fixture is not used by test_step")


def test_predict_shape(weights, batch):
    x, _ = batch
    assert predict(weights, x).shape == (8,)


def test_loss_is_positive(weights, batch):
    assert loss(weights, *batch) > 0


@pytest.mark.slow
def test_step(weights, batch):
    x, y = batch

    def objective(w):
        return loss(clipped_norm(w), x, y)

    g = jax.grad(objective)(weights)
    new = weights - LEARNING_RATE * g
    assert loss(new, x, y) < loss(weights, x, y)


class TestModel:
    def setup_method(self, method):
        self.scale = 2.0

    @pytest.fixture
    def doubled(self, weights):
        return weights * self.scale

    def test_scaled(self, doubled, batch):
        assert predict(doubled, batch[0]).shape == (8,)

    def test_scale_is_set(self, weights):
        assert self.scale * weights.sum() == 0.0

    @pytest.mark.parametrize("n", [1, 2])
    def test_many(self, n):
        assert n > 0
