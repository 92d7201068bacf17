"""Mixture-of-experts regression in Flax linen, trained with Optax; the loss is differentiated by Enzyme-JAX."""
import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from enzyme_ad.jax import enzyme_jax_ir

NUM_EXPERTS = 4
TOP_K = 2


class Expert(nn.Module):
    hidden: int

    @nn.compact
    def __call__(self, x):
        h = nn.gelu(nn.Dense(self.hidden)(x))
        return nn.Dense(x.shape[-1])(h)


class Router(nn.Module):
    num_experts: int
    k: int

    @nn.compact
    def __call__(self, x):
        logits = nn.Dense(self.num_experts, use_bias=False)(x)
        weights, index = jax.lax.top_k(logits, self.k)
        return jax.nn.softmax(weights, axis=-1), index


class MoE(nn.Module):
    num_experts: int = NUM_EXPERTS
    k: int = TOP_K
    hidden: int = 16

    @nn.compact
    def __call__(self, x):
        gates, index = Router(self.num_experts, self.k)(x)
        outputs = jnp.stack([Expert(self.hidden, name=f"expert_{i}")(x) for i in range(self.num_experts)], axis=1)
        chosen = jnp.take_along_axis(outputs, index[..., None], axis=1)
        return jnp.sum(gates[..., None] * chosen, axis=1)


model = MoE()


@enzyme_jax_ir()
def loss_fn(params, x, y):
    pred = model.apply({"params": params}, x)
    return jnp.mean((pred - y) ** 2)


@functools.partial(jax.jit, static_argnums=0)
def train_step(optimizer, params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def main():
    key, data_key = jax.random.split(jax.random.key(0))
    x = jax.random.normal(data_key, (32, 8))
    y = jnp.sin(x)
    params = model.init(key, x)["params"]
    optimizer = optax.adamw(1e-3, weight_decay=1e-4)
    opt_state = optimizer.init(params)
    for step in range(3):
        params, opt_state, loss = train_step(optimizer, params, opt_state, x, y)
        print(f"step {step}: loss {loss:.4f}")


if __name__ == "__main__":
    main()
