"""Flax NNX: a module (holding its own PRNG stream) whose call runs a lax.while_loop, trained with
nnx.jit(nnx.grad(…)) after an nnx.split / nnx.merge round trip, with an Optax update."""
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class Refine(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.dense = nnx.Linear(3, 3, rngs=rngs)
        self.noise = nnx.Rngs(noise=1)

    def __call__(self, x):
        x = x + 0.01 * jax.random.normal(self.noise.noise(), x.shape)

        def body(carry):
            i, h = carry
            return i + 1, jnp.tanh(self.dense(h))

        return jax.lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1]


def loss_fn(model, x):
    return jnp.mean(model(x) ** 2)


model = Refine(nnx.Rngs(0))
graph, state = nnx.split(model)
model = nnx.merge(graph, state)
tx = optax.sgd(0.1)
opt_state = tx.init(nnx.state(model, nnx.Param))


@nnx.jit
def step(model, x):
    return nnx.grad(loss_fn)(model, x)


grads = step(model, jnp.ones((2, 3)))
updates, opt_state = tx.update(grads, opt_state)
print(updates)
