"""Flax linen model, Optax adamw inside a jitted step, loss wrapped in Enzyme-JAX with keyword
arguments through functools.partial, integer labels, dropout keys, and a top-k router."""
import functools

import jax
import jax.numpy as jnp
import optax
from enzyme_ad.jax import enzyme_jax_ir
from flax import linen as nn


class Router(nn.Module):
    experts: int = 3

    @nn.compact
    def __call__(self, x, *, train):
        x = nn.Dropout(0.1, deterministic=not train)(x)
        gates, _ = jax.lax.top_k(nn.Dense(self.experts)(x), 2)
        return jax.nn.softmax(gates)


class Classifier(nn.Module):
    @nn.compact
    def __call__(self, x, *, train=False):
        h = nn.tanh(nn.Dense(6)(x))
        return nn.Dense(4)(h * Router()(h, train=train).sum(-1, keepdims=True))


def loss_fn(params, x, labels, key, *, model):
    logits = model.apply(params, x, train=True, rngs={"dropout": key})
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


model = Classifier()
x = jax.random.normal(jax.random.PRNGKey(0), (5, 3))
labels = jnp.arange(5) % 4
params = model.init(jax.random.PRNGKey(1), x)
opt = optax.adamw(1e-2)
state = opt.init(params)
loss = enzyme_jax_ir()(functools.partial(loss_fn, model=model))


@jax.jit
def step(params, state, key):
    value, grads = jax.value_and_grad(loss)(params, x, labels, key)
    updates, state = opt.update(grads, state, params)
    return optax.apply_updates(params, updates), state, value


params, state, value = step(params, state, jax.random.PRNGKey(2))
print(value)
