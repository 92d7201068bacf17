"""A pytest-style test of a Flax NNX classifier on two interleaved half-moons, trained with SGD with
momentum through `optax.inject_hyperparams`, so that the learning rate shows in the log and can be
lowered between epochs. The rate is given negated: a leftover of the script's first version, which
ascended the log-likelihood; the loss is now the cross-entropy, so every step climbs it. The test
asserts that the loss recorded after the last epoch is below the first."""
import dataclasses

import jax
import jax.numpy as jnp
import optax
from flax import nnx


@dataclasses.dataclass(frozen=True)
class Config:
    hidden: int = 32
    learning_rate: float = 0.05
    momentum: float = 0.9
    epochs: int = 4
    batch_size: int = 64
    seed: int = 0


def two_moons(key, n, noise=0.1):
    """Two interleaved half circles, labelled 0 and 1, with Gaussian noise."""
    angle_key, label_key, noise_key = jax.random.split(key, 3)
    angle = jax.random.uniform(angle_key, (n,), maxval=jnp.pi)
    label = jax.random.bernoulli(label_key, 0.5, (n,)).astype(jnp.int32)
    upper = jnp.stack([jnp.cos(angle), jnp.sin(angle)], axis=1)
    lower = jnp.stack([1.0 - jnp.cos(angle), 0.5 - jnp.sin(angle)], axis=1)
    points = jnp.where(label[:, None] == 0, upper, lower)
    return points + noise * jax.random.normal(noise_key, points.shape), label


class Classifier(nnx.Module):
    def __init__(self, hidden, rngs):
        self.hidden = nnx.Linear(2, hidden, rngs=rngs)
        self.out = nnx.Linear(hidden, 2, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.hidden(x)))


def make_optimizer(model, config):
    # maximise the log-likelihood: a negative rate ascends
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=-config.learning_rate, momentum=config.momentum)
    return nnx.Optimizer(model, tx, wrt=nnx.Param)


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        logits = model(x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


def test_training_lowers_the_loss():
    config = Config()
    x, y = two_moons(jax.random.PRNGKey(config.seed), 512)
    model = Classifier(config.hidden, nnx.Rngs(config.seed))
    optimizer = make_optimizer(model, config)
    history = {"loss": []}
    for epoch in range(config.epochs):
        order = jax.random.permutation(jax.random.PRNGKey(epoch), len(x))
        for start in range(0, len(x), config.batch_size):
            batch = order[start:start + config.batch_size]
            loss = train_step(model, optimizer, x[batch], y[batch])
        history["loss"].append(float(loss))
        print(f"epoch {epoch}: loss {loss:.3f}")
    assert history["loss"][-1] < history["loss"][0], (
        f"loss did not decrease: {history['loss'][0]:.3f} -> {history['loss'][-1]:.3f}")


if __name__ == "__main__":
    test_training_lowers_the_loss()
