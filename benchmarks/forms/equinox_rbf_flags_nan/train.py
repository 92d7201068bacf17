"""Radial-basis-function regression with Equinox and Optax, on data read from an .npz file.

usage: python train.py --data data.npz [--centers 8] [--steps 50] [--lr 0.01] [--width 1.0] [--seed 0]

The centres are initialised on training points (a common recipe); the distance from a point to
its own centre is exactly zero, `jnp.linalg.norm` has an infinite derivative there, and the
training loop's finiteness check on the gradients fires.
"""
import argparse

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="an .npz file with arrays x (N, D) and y (N,)")
    parser.add_argument("--centers", type=int, default=8)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--width", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


class RBFNet(eqx.Module):
    centers: jax.Array
    log_width: jax.Array
    head: eqx.nn.Linear

    def __init__(self, centers, width, key):
        self.centers = centers
        self.log_width = jnp.log(jnp.asarray(width, dtype=jnp.float32))
        self.head = eqx.nn.Linear(centers.shape[0], 1, key=key)

    def __call__(self, x):
        distances = jnp.linalg.norm(x[None, :] - self.centers, axis=-1)
        features = jnp.exp(-distances / jnp.exp(self.log_width))
        return self.head(features)[0]


def mse(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


def main():
    args = parse_args()
    data = np.load(args.data)
    x, y = jnp.asarray(data["x"]), jnp.asarray(data["y"])
    key = jax.random.PRNGKey(args.seed)
    pick, init = jax.random.split(key)
    centers = x[jax.random.choice(pick, x.shape[0], (args.centers,), replace=False)]
    model = RBFNet(centers, args.width, init)
    optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(args.lr))
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def step(model, opt_state):
        loss, grads = eqx.filter_value_and_grad(mse)(model, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), opt_state, loss, grads

    for i in range(args.steps):
        model, opt_state, loss, grads = step(model, opt_state)
        leaves = jax.tree_util.tree_leaves(eqx.filter(grads, eqx.is_array))
        assert all(bool(jnp.isfinite(g).all()) for g in leaves), f"non-finite gradient at step {i}"
        if i % 10 == 0:
            print(f"step {i}: loss {float(loss):.4f}")


if __name__ == "__main__":
    main()
