"""A small Flax-style model (module classes, parameter pytrees, an optimizer, a training loop) whose
gradient fails: one layer solves for its activation with `lax.while_loop` (Newton iterations), and
JAX cannot reverse-differentiate a while loop. No flax dependency: the module tree is written here."""
import dataclasses
import math
from typing import Any, Callable, Dict, List, Sequence

import jax
import jax.numpy as jnp
from jax import lax

Params = Dict[str, Any]


# -- a tiny module system ---------------------------------------------------------------------
class Module:
    """A module owns named children; `init` builds a parameter pytree, `apply` uses it."""

    def children(self) -> Dict[str, "Module"]:
        return {k: v for k, v in vars(self).items() if isinstance(v, Module)}

    def init_own(self, key, shape_in) -> Params:
        return {}

    def init(self, key, shape_in) -> Params:
        params = self.init_own(key, shape_in)
        for i, (name, child) in enumerate(sorted(self.children().items())):
            params[name] = child.init(jax.random.fold_in(key, i), self.child_input(name, shape_in))
        return params

    def child_input(self, name: str, shape_in):
        return shape_in

    def apply(self, params: Params, x):
        raise NotImplementedError

    def __call__(self, params, x):
        return self.apply(params, x)


class Dense(Module):
    def __init__(self, features: int, use_bias: bool = True):
        self.features = features
        self.use_bias = use_bias

    def init_own(self, key, shape_in):
        fan_in = shape_in[-1]
        w = jax.random.normal(key, (fan_in, self.features)) / math.sqrt(fan_in)
        params = {"kernel": w}
        if self.use_bias:
            params["bias"] = jnp.zeros((self.features,))
        return params

    def apply(self, params, x):
        y = x @ params["kernel"]
        if self.use_bias:
            y = y + params["bias"]
        return y


class LayerNorm(Module):
    def __init__(self, eps: float = 1e-5):
        self.eps = eps

    def init_own(self, key, shape_in):
        return {"scale": jnp.ones((shape_in[-1],)), "shift": jnp.zeros((shape_in[-1],))}

    def apply(self, params, x):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + self.eps) * params["scale"] + params["shift"]


class Activation(Module):
    def __init__(self, fn: Callable):
        self.fn = fn

    def apply(self, params, x):
        return self.fn(x)


class ImplicitSoftplus(Module):
    """Solves y + exp(y) = x elementwise by Newton's method: an 'implicit layer'."""

    def __init__(self, tol: float = 1e-4, max_iter: int = 50):
        self.tol = tol
        self.max_iter = max_iter

    def apply(self, params, x):
        def cond(state):
            i, y, step = state
            return jnp.logical_and(i < self.max_iter, jnp.max(jnp.abs(step)) > self.tol)

        def body(state):
            i, y, _ = state
            f = y + jnp.exp(y) - x
            step = f / (1.0 + jnp.exp(y))
            return i + 1, y - step, step

        _, y, _ = lax.while_loop(cond, body, (0, jnp.zeros_like(x), jnp.ones_like(x)))
        return y


class Sequential(Module):
    def __init__(self, layers: Sequence[Module]):
        self.layers = list(layers)

    def children(self):
        return {f"layer_{i}": layer for i, layer in enumerate(self.layers)}

    def init(self, key, shape_in):
        params = {}
        shape = shape_in
        for i, layer in enumerate(self.layers):
            params[f"layer_{i}"] = layer.init(jax.random.fold_in(key, i), shape)
            shape = jax.eval_shape(lambda p, x: layer.apply(p, x), params[f"layer_{i}"],
                                   jax.ShapeDtypeStruct(shape, jnp.float32)).shape
        return params

    def apply(self, params, x):
        for i, layer in enumerate(self.layers):
            x = layer.apply(params[f"layer_{i}"], x)
        return x


class ResidualBlock(Module):
    def __init__(self, width: int, implicit: bool):
        self.norm = LayerNorm()
        self.inner = Sequential([Dense(width * 2), ImplicitSoftplus() if implicit else Activation(jax.nn.gelu),
                                 Dense(width)])

    def apply(self, params, x):
        return x + self.inner.apply(params["inner"], self.norm.apply(params["norm"], x))


class Classifier(Module):
    def __init__(self, width: int, depth: int, classes: int):
        self.embed = Dense(width)
        self.blocks = Sequential([ResidualBlock(width, implicit=(i == depth - 1)) for i in range(depth)])
        self.head = Dense(classes)

    def child_input(self, name, shape_in):
        if name == "embed":
            return shape_in
        return shape_in[:-1] + (self.embed.features,)

    def apply(self, params, x):
        h = self.embed.apply(params["embed"], x)
        h = self.blocks.apply(params["blocks"], h)
        return self.head.apply(params["head"], jnp.tanh(h))


# -- training ---------------------------------------------------------------------------------
@dataclasses.dataclass
class TrainState:
    params: Params
    momentum: Params
    step: int


jax.tree_util.register_pytree_node(
    TrainState,
    lambda s: ((s.params, s.momentum, s.step), None),
    lambda _, c: TrainState(*c),
)


class SGD:
    def __init__(self, learning_rate: float, beta: float = 0.9):
        self.learning_rate = learning_rate
        self.beta = beta

    def init(self, params) -> TrainState:
        return TrainState(params, jax.tree_util.tree_map(jnp.zeros_like, params), 0)

    def update(self, state: TrainState, grads) -> TrainState:
        momentum = jax.tree_util.tree_map(lambda m, g: self.beta * m + g, state.momentum, grads)
        params = jax.tree_util.tree_map(lambda p, m: p - self.learning_rate * m, state.params, momentum)
        return TrainState(params, momentum, state.step + 1)


def cross_entropy(logits, labels, classes):
    one_hot = jax.nn.one_hot(labels, classes)
    return -jnp.mean(jnp.sum(one_hot * jax.nn.log_softmax(logits), axis=-1))


def make_data(key, n: int, features: int, classes: int):
    kx, kw = jax.random.split(key)
    x = jax.random.normal(kx, (n, features))
    w = jax.random.normal(kw, (features, classes))
    return x, jnp.argmax(x @ w, axis=-1)


def batches(x, y, size: int) -> List:
    return [(x[i:i + size], y[i:i + size]) for i in range(0, x.shape[0], size)]


def main():
    features, classes = 6, 3
    model = Classifier(width=8, depth=2, classes=classes)
    key = jax.random.PRNGKey(0)
    params = model.init(key, (4, features))
    optimizer = SGD(learning_rate=0.05)
    state = optimizer.init(params)
    x, y = make_data(jax.random.PRNGKey(1), 16, features, classes)

    def loss_fn(params, batch):
        inputs, labels = batch
        logits = model(params, inputs)
        loss = cross_entropy(logits, labels, classes)
        accuracy = jnp.mean(jnp.argmax(logits, -1) == labels)
        return loss, {"accuracy": accuracy}

    @jax.jit
    def train_step(state, batch):
        (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params, batch)
        return optimizer.update(state, grads), loss, aux

    for epoch in range(2):
        for batch in batches(x, y, 4):
            state, loss, aux = train_step(state, batch)
        print(f"epoch {epoch}: loss {float(loss):.4f} accuracy {float(aux['accuracy']):.2f}")


if __name__ == "__main__":
    main()
