"""A Flax NNX regression model with a hand-written smooth activation whose custom JVP rule was derived
by hand (and wrongly squares the tangent); trained with Optax through nnx.value_and_grad."""
import jax
import jax.numpy as jnp
import optax
from flax import nnx


@jax.custom_jvp
def softclip(x):
    return jnp.tanh(x) * 3.0


@softclip.defjvp
def softclip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = softclip(x)
    slope = 3.0 * (1.0 - jnp.tanh(x) ** 2)
    return y, slope * t * t


class Regressor(nnx.Module):
    def __init__(self, din, dhidden, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(din, dhidden, rngs=rngs)
        self.dropout = nnx.Dropout(0.1, rngs=rngs)
        self.out = nnx.Linear(dhidden, 1, rngs=rngs)

    def __call__(self, x):
        h = softclip(self.hidden(x))
        return self.out(self.dropout(h)).squeeze(-1)


def loss_fn(model, x, y):
    return jnp.mean(optax.huber_loss(model(x), y))


@nnx.jit
def train_step(model, optimizer, metrics, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    metrics.update(loss=loss)
    optimizer.update(model, grads)


def main():
    model = Regressor(5, 32, nnx.Rngs(params=0, dropout=1))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    metrics = nnx.MultiMetric(loss=nnx.metrics.Average("loss"))
    x = jax.random.normal(jax.random.key(0), (64, 5))
    y = jnp.sin(x).sum(axis=1)
    for epoch in range(3):
        train_step(model, optimizer, metrics, x, y)
        print(epoch, metrics.compute())
        metrics.reset()


if __name__ == "__main__":
    main()
