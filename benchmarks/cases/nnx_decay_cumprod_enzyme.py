"""A small causal sequence model in Flax NNX with decaying memory (cumulative product of forget gates),
trained with Optax; gradients of the loss come from Enzyme-JAX."""
import jax
import jax.numpy as jnp
import optax
from enzyme_ad.jax import enzyme_jax_ir
from flax import nnx

SEQ_LEN, FEATURES, HIDDEN = 12, 6, 16


class DecayMixer(nnx.Module):
    def __init__(self, features: int, rngs: nnx.Rngs):
        self.gate = nnx.Linear(features, features, rngs=rngs)
        self.value = nnx.Linear(features, features, rngs=rngs)

    def __call__(self, x):
        forget = jax.nn.sigmoid(self.gate(x))
        decay = jnp.cumprod(forget, axis=1)
        return jnp.cumsum(decay * self.value(x), axis=1) / (1.0 + jnp.cumsum(decay, axis=1))


class Block(nnx.Module):
    def __init__(self, features: int, hidden: int, rngs: nnx.Rngs):
        self.norm = nnx.LayerNorm(features, rngs=rngs)
        self.mixer = DecayMixer(features, rngs)
        self.up = nnx.Linear(features, hidden, rngs=rngs)
        self.down = nnx.Linear(hidden, features, rngs=rngs)

    def __call__(self, x):
        x = x + self.mixer(self.norm(x))
        return x + self.down(nnx.gelu(self.up(x)))


class SequenceModel(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.blocks = nnx.List([Block(FEATURES, HIDDEN, rngs) for _ in range(2)])
        self.head = nnx.Linear(FEATURES, 1, rngs=rngs)

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)[..., 0]


def make_loss(graphdef):
    @enzyme_jax_ir()
    def loss(state, x, y):
        model = nnx.merge(graphdef, state)
        return jnp.mean((model(x) - y) ** 2)
    return loss


@nnx.jit
def train_step(model, optimizer, x, y):
    graphdef, state = nnx.split(model, nnx.Param)
    loss, grads = jax.value_and_grad(make_loss(graphdef))(state, x, y)
    optimizer.update(model, grads)
    return loss


def main():
    model = SequenceModel(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(3e-3), wrt=nnx.Param)
    x = jax.random.normal(jax.random.key(1), (4, SEQ_LEN, FEATURES))
    y = jnp.cumsum(x[..., 0], axis=1) / SEQ_LEN
    for step in range(5):
        print(step, float(train_step(model, optimizer, x, y)))


if __name__ == "__main__":
    main()
