"""Pytrees (a registered dataclass, a namedtuple, dicts), keyword arguments through functools.partial,
and a jit inside a grad inside a jit; the inner function takes a Schur decomposition, which JAX
cannot differentiate."""
import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg


@functools.partial(jax.tree_util.register_dataclass, data_fields=["weight", "shift"], meta_fields=["name"])
@dataclasses.dataclass
class Layer:
    weight: jax.Array
    shift: jax.Array
    name: str = "layer"


class Batch(NamedTuple):
    inputs: jax.Array
    targets: dict


@jax.jit
def spectral(m):
    t, _ = jax.scipy.linalg.schur(m)
    return jnp.diagonal(t)


def loss(layer, batch, *, scale):
    m = layer.weight @ batch.inputs + layer.shift
    return scale * jnp.sum((spectral(m) - batch.targets["y"]) ** 2)


layer = Layer(jnp.eye(3) + 0.1, jnp.full((3, 3), 0.2))
batch = Batch(jnp.ones((3, 3)), {"y": jnp.arange(3.0)})
grad_fn = jax.jit(jax.grad(functools.partial(loss, scale=0.5)))
print(grad_fn(layer, batch))
