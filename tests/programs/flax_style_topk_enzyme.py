"""A Flax-style model trained with Enzyme-JAX gradients for one block: the block's forward pass is
wrapped with `enzyme_jax_ir`, and its top-k pooling has no adjoint in Enzyme (`chlo.top_k`).
Module classes, parameter pytrees, an optimizer and a training loop; no flax dependency."""
import math
from typing import Any, Dict, Sequence

import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir

Params = Dict[str, Any]


class Module:
    def init(self, key, features_in: int) -> Params:
        raise NotImplementedError

    def apply(self, params: Params, x):
        raise NotImplementedError

    def features_out(self, features_in: int) -> int:
        return features_in


class Dense(Module):
    def __init__(self, features: int):
        self.features = features

    def init(self, key, features_in):
        return {"kernel": jax.random.normal(key, (features_in, self.features)) / math.sqrt(features_in),
                "bias": jnp.zeros((self.features,))}

    def apply(self, params, x):
        return x @ params["kernel"] + params["bias"]

    def features_out(self, features_in):
        return self.features


class TopKPool(Module):
    """Keeps the k largest activations of each row and averages them."""

    def __init__(self, k: int):
        self.k = k

    def init(self, key, features_in):
        return {}

    def apply(self, params, x):
        values, _ = jax.lax.top_k(x, self.k)
        return jnp.mean(values, axis=-1, keepdims=True)

    def features_out(self, features_in):
        return 1


class PooledBlock(Module):
    """Dense -> tanh -> top-k pooling, differentiated by Enzyme-JAX."""

    def __init__(self, width: int, k: int):
        self.dense = Dense(width)
        self.pool = TopKPool(k)
        self.forward = enzyme_jax_ir()(self._forward)

    def init(self, key, features_in):
        return {"dense": self.dense.init(key, features_in), "pool": {}}

    def _forward(self, params, x):
        return self.pool.apply(params["pool"], jnp.tanh(self.dense.apply(params["dense"], x)))

    def apply(self, params, x):
        return self.forward(params, x)

    def features_out(self, features_in):
        return 1


class Stack(Module):
    def __init__(self, layers: Sequence[Module]):
        self.layers = list(layers)

    def init(self, key, features_in):
        params = []
        for i, layer in enumerate(self.layers):
            params.append(layer.init(jax.random.fold_in(key, i), features_in))
            features_in = layer.features_out(features_in)
        return params

    def apply(self, params, x):
        for layer, p in zip(self.layers, params):
            x = layer.apply(p, x)
        return x


class Regressor(Module):
    def __init__(self, width: int, k: int):
        self.body = Stack([Dense(width), PooledBlock(width, k), Dense(1)])

    def init(self, key, features_in):
        return {"body": self.body.init(key, features_in)}

    def apply(self, params, x):
        return self.body.apply(params["body"], x)[..., 0]


def mse(model, params, batch):
    x, y = batch
    return jnp.mean((model.apply(params, x) - y) ** 2)


class Adam:
    def __init__(self, lr=1e-2, b1=0.9, b2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps

    def init(self, params):
        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        return {"m": zeros, "v": zeros, "t": 0}

    def update(self, params, grads, state):
        t = state["t"] + 1
        m = jax.tree_util.tree_map(lambda m, g: self.b1 * m + (1 - self.b1) * g, state["m"], grads)
        v = jax.tree_util.tree_map(lambda v, g: self.b2 * v + (1 - self.b2) * g * g, state["v"], grads)
        scale = self.lr * math.sqrt(1 - self.b2 ** t) / (1 - self.b1 ** t)
        params = jax.tree_util.tree_map(lambda p, m, v: p - scale * m / (jnp.sqrt(v) + self.eps), params, m, v)
        return params, {"m": m, "v": v, "t": t}


def main():
    model = Regressor(width=6, k=2)
    params = model.init(jax.random.PRNGKey(0), 4)
    optimizer = Adam()
    opt_state = optimizer.init(params)
    x = jax.random.normal(jax.random.PRNGKey(1), (8, 4))
    y = jnp.sin(x.sum(-1))
    grad_fn = jax.jit(jax.grad(lambda p, b: mse(model, p, b)))
    for step in range(3):
        grads = grad_fn(params, (x, y))
        params, opt_state = optimizer.update(params, grads, opt_state)
        print(step, float(mse(model, params, (x, y))))


if __name__ == "__main__":
    main()
