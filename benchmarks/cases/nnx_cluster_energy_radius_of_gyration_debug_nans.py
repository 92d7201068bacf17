"""Learn the potential energy of a 16-atom Lennard-Jones cluster from an MD run.

Descriptors (radius of gyration + pair-distance statistics) are computed inside
a Flax NNX model from raw, *unwrapped* trajectory coordinates (Angstrom), and a
small MLP maps them to the energy.  NaN debugging is switched on globally.
"""
import jax

jax.config.update("jax_debug_nans", True)

import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

N_ATOMS = 16
N_FRAMES = 256
SEED = 7

I_IDX, J_IDX = np.triu_indices(N_ATOMS, k=1)


def lj_energy(pos, sigma=1.0, eps=1.0):
    d = np.linalg.norm(pos[I_IDX] - pos[J_IDX], axis=-1)
    sr6 = (sigma / d) ** 6
    return float(np.sum(4.0 * eps * (sr6 ** 2 - sr6)))


def make_trajectory(seed=SEED):
    rng = np.random.default_rng(seed)
    # random compact template with a hard-core minimum distance of 1.05 sigma
    template = [np.zeros(3)]
    while len(template) < N_ATOMS:
        cand = rng.normal(0.0, 1.0, 3)
        if all(np.linalg.norm(cand - t) > 1.05 for t in template):
            template.append(cand)
    template = np.array(template)
    template -= template.mean(0)

    # the cluster drifts ballistically through a large box; coordinates are
    # unwrapped, so the absolute positions grow over the trajectory
    velocity = rng.normal(0.0, 1.0, 3)
    velocity *= 45.0 / np.linalg.norm(velocity)          # Angstrom per frame
    positions, energies = [], []
    for t in range(N_FRAMES):
        breathing = 1.0 + 0.08 * np.sin(2 * np.pi * t / 37.0) + rng.normal(0, 0.02)
        frame = breathing * template + rng.normal(0.0, 0.03, template.shape)
        energies.append(lj_energy(frame))
        positions.append(frame + t * velocity + np.array([150.0, -80.0, 40.0]))
    positions = np.array(positions)
    energies = np.array(energies)
    return positions, energies


class ClusterEnergy(nnx.Module):
    def __init__(self, hidden: int, rngs: nnx.Rngs):
        self.l1 = nnx.Linear(4, hidden, rngs=rngs)
        self.l2 = nnx.Linear(hidden, hidden, rngs=rngs)
        self.out = nnx.Linear(hidden, 1, rngs=rngs)

    @staticmethod
    def descriptors(pos):
        # radius of gyration: Rg^2 = <|r|^2> - |<r>|^2
        mean_sq = jnp.mean(jnp.sum(pos ** 2, axis=-1))
        com_sq = jnp.sum(jnp.mean(pos, axis=0) ** 2)
        rg = jnp.sqrt(mean_sq - com_sq)
        r = jnp.sqrt(jnp.sum((pos[I_IDX] - pos[J_IDX]) ** 2, axis=-1))
        return jnp.stack([rg, jnp.mean(r), jnp.min(r), jnp.mean(r ** -6)])

    def __call__(self, pos):
        x = jax.vmap(self.descriptors)(pos)
        h = nnx.silu(self.l1(x))
        h = nnx.silu(self.l2(h))
        return self.out(h)[:, 0]


@nnx.jit
def train_step(model, optimizer, pos, energy):
    def loss_fn(model):
        pred = model(pos)
        return jnp.mean((pred - energy) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


def main():
    positions, energies = make_trajectory()
    e_mean, e_std = energies.mean(), energies.std()
    pos = jnp.asarray(positions, jnp.float32)
    target = jnp.asarray((energies - e_mean) / e_std, jnp.float32)
    print(f"frames={pos.shape[0]} atoms={pos.shape[1]} "
          f"E = {e_mean:.3f} +- {e_std:.3f} eps, max |coord| = {np.abs(positions).max():.0f} A")

    model = ClusterEnergy(32, nnx.Rngs(SEED))
    optimizer = nnx.Optimizer(model, optax.adam(3e-3), wrt=nnx.Param)
    for step in range(1, 301):
        loss = train_step(model, optimizer, pos, target)
        if step % 50 == 0:
            print(f"step {step:4d}  mse {float(loss):.4f}")
    rmse = float(jnp.sqrt(jnp.mean((model(pos) - target) ** 2))) * e_std
    print(f"energy RMSE: {rmse:.4f} eps")


if __name__ == "__main__":
    main()
