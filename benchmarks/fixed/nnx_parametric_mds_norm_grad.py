"""Parametric multidimensional scaling (Sammon-style stress) with Flax NNX + Optax.

An MLP maps high-dimensional feature vectors to 2-D coordinates so that
Euclidean distances in the embedding match the distances in feature space.
"""
import jax
import jax.numpy as jnp
import optax
from flax import nnx

N, D, EMB = 96, 16, 2
STEPS = 150


class Encoder(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(D, 64, rngs=rngs)
        self.fc2 = nnx.Linear(64, 64, rngs=rngs)
        self.out = nnx.Linear(64, EMB, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.fc1(x))
        h = nnx.relu(self.fc2(h))
        return self.out(h)


def make_data(key):
    """Three noisy clusters living on a low-dimensional subspace."""
    kc, kp, kn, ka = jax.random.split(key, 4)
    centers = 3.0 * jax.random.normal(kc, (3, 4))
    labels = jax.random.randint(ka, (N,), 0, 3)
    latent = centers[labels] + 0.5 * jax.random.normal(kn, (N, 4))
    proj = jax.random.normal(kp, (4, D)) / 2.0
    return latent @ proj, labels


def pairwise_distances(z):
    """Euclidean distances, safe to differentiate at d = 0 (the diagonal):
    the norm has no derivative at the zero vector, so mask it out of the sqrt."""
    diff = z[:, None, :] - z[None, :, :]
    sq = jnp.sum(diff * diff, axis=-1)
    nonzero = sq > 0
    return jnp.where(nonzero, jnp.sqrt(jnp.where(nonzero, sq, 1.0)), 0.0)


def stress(model, x, target):
    z = model(x)
    d = pairwise_distances(z)
    w = 1.0 / (target + 1.0)                    # emphasise local structure
    return jnp.sum(w * (d - target) ** 2) / jnp.sum(w)


@nnx.jit
def train_step(model, optimizer, x, target):
    loss, grads = nnx.value_and_grad(stress)(model, x, target)
    optimizer.update(model, grads)
    return loss, optax.global_norm(grads)


def main():
    x, labels = make_data(jax.random.PRNGKey(7))
    target = pairwise_distances(x)
    model = Encoder(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

    for step in range(STEPS):
        loss, gnorm = train_step(model, optimizer, x, target)
        assert jnp.isfinite(loss), f"step {step}: stress is {loss}"
        assert jnp.isfinite(gnorm), f"step {step}: gradient norm is {gnorm}"
        if step % 30 == 0:
            print(f"step {step:3d}  stress {float(loss):.4f}  |g| {float(gnorm):.3f}")

    z = model(x)
    for c in range(3):
        print(f"cluster {c}: centroid {z[labels == c].mean(0)}")


if __name__ == "__main__":
    main()
