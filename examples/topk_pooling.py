"""A small sequence classifier whose pooling keeps the k strongest features, trained with
gradients from Enzyme-JAX. Enzyme-JAX cannot differentiate `jax.lax.top_k` (chlo.top_k), so the
first training step fails. Reduce it with:  reducer reduce examples/topk_pooling.py
"""
import argparse
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


@dataclass
class Config:
    features: int = 8
    hidden: int = 16
    k: int = 3
    classes: int = 4
    lr: float = 0.05
    steps: int = 3


def init(key, cfg: Config):
    k1, k2 = jax.random.split(key)
    return {
        "embed": jax.random.normal(k1, (cfg.features, cfg.hidden)) * 0.3,
        "head": jax.random.normal(k2, (cfg.hidden, cfg.classes)) * 0.3,
    }


def topk_pool(h, k):
    values, _ = jax.lax.top_k(jnp.swapaxes(h, -1, -2), k)
    return values.mean(-1)


def logits(params, x, cfg: Config):
    h = jnp.tanh(x @ params["embed"])
    return topk_pool(h, cfg.k) @ params["head"]


def make_loss(cfg: Config):
    @enzyme_jax_ir()
    def loss(params, x, y):
        logp = jax.nn.log_softmax(logits(params, x, cfg))
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    return loss


def train(cfg: Config):
    key = jax.random.PRNGKey(0)
    params = init(key, cfg)
    x = jax.random.normal(key, (5, 7, cfg.features))
    y = jnp.array([0, 1, 2, 3, 0])
    grad = jax.jit(jax.grad(make_loss(cfg)))
    for step in range(cfg.steps):
        g = grad(params, x, y)
        params = jax.tree_util.tree_map(lambda p, d: p - cfg.lr * d, params, g)
        print("step", step, "done")
    return params


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    train(Config(steps=args.steps))
