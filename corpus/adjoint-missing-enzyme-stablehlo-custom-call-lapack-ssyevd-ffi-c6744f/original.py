"""A linear layer regularised by the largest eigenvalue of its Gram matrix (a spectral-norm
penalty); gradients from Enzyme-JAX."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def spectral_radius(w):
    gram = w.T @ w
    return jnp.linalg.eigh(gram)[0][-1]


@enzyme_jax_ir()
def loss(w, x, y, lam):
    pred = x @ w
    return jnp.mean((pred - y) ** 2) + lam * spectral_radius(w)


def train(steps=3):
    key = jax.random.PRNGKey(3)
    w = jax.random.normal(key, (5, 4)) * 0.3
    x = jax.random.normal(key, (12, 5))
    y = jax.random.normal(jax.random.PRNGKey(4), (12, 4))
    grad = jax.jit(jax.grad(loss))
    for i in range(steps):
        w = w - 0.05 * grad(w, x, y, 0.1)
        print("step", i, float(loss(w, x, y, 0.1)))


if __name__ == "__main__":
    train()
