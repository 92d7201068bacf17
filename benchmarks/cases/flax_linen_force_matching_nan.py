"""Force matching for a small molecule: a Lennard-Jones energy with a learned pairwise correction
(Flax linen), trained with Optax on reference forces. Forces are minus the gradient of the energy
with respect to positions; the training step differentiates the force loss again with respect to
the parameters. The step checks that every gradient is finite."""
import functools
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax


class Config(NamedTuple):
    sigma: float = 1.0
    epsilon: float = 0.5
    hidden: int = 16


class PairCorrection(nn.Module):
    hidden: int

    @nn.compact
    def __call__(self, r):
        h = nn.tanh(nn.Dense(self.hidden)(r[..., None]))
        return nn.Dense(1)(h)[..., 0]


def pair_distances(positions):
    displacement = positions[:, None, :] - positions[None, :, :]
    return jnp.linalg.norm(displacement, axis=-1)


def energy(positions, params, model, config):
    r = pair_distances(positions)
    off_diagonal = ~jnp.eye(positions.shape[0], dtype=bool)
    safe_r = jnp.where(off_diagonal, r, 1.0)
    lj = 4 * config.epsilon * ((config.sigma / safe_r) ** 12 - (config.sigma / safe_r) ** 6)
    correction = model.apply(params, safe_r)
    return 0.5 * jnp.sum(jnp.where(off_diagonal, lj + correction, 0.0))


def force_loss(params, batch, model, config):
    forces = jax.vmap(lambda p: -jax.grad(energy)(p, params, model, config))(batch["positions"])
    return jnp.mean((forces - batch["forces"]) ** 2)


@functools.partial(jax.jit, static_argnames=("model", "config", "optimizer"))
def train_step(params, opt_state, batch, model, config, optimizer):
    loss, grads = jax.value_and_grad(force_loss)(params, batch, model, config)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss, grads


def main():
    config = Config()
    model = PairCorrection(config.hidden)
    key = jax.random.PRNGKey(0)
    positions = 1.5 * jax.random.normal(key, (4, 5, 3))
    batch = {"positions": positions, "forces": jnp.zeros_like(positions)}
    params = model.init(jax.random.PRNGKey(1), jnp.ones((5, 5)))
    optimizer = optax.adam(1e-3)
    opt_state = optimizer.init(params)
    for step in range(3):
        params, opt_state, loss, grads = train_step(params, opt_state, batch, model, config, optimizer)
        for path, g in jax.tree_util.tree_leaves_with_path(grads):
            name = jax.tree_util.keystr(path)
            assert jnp.isfinite(g).all(), f"step {step}: gradient for {name} is not finite"
        print(f"step {step}: loss {loss:.4f}")


if __name__ == "__main__":
    main()
