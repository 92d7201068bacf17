"""Low-rank matrix completion with a nuclear-norm penalty (sum of singular values); gradients
from Enzyme-JAX."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def nuclear_norm(m):
    return jnp.sum(jnp.linalg.svd(m, compute_uv=False))


@enzyme_jax_ir()
def objective(m, observed, mask, lam):
    fit = jnp.sum(mask * (m - observed) ** 2)
    return fit + lam * nuclear_norm(m)


def complete(steps=3):
    key = jax.random.PRNGKey(2)
    u = jax.random.normal(key, (6, 2))
    observed = u @ u.T
    mask = (jax.random.uniform(key, (6, 6)) > 0.3).astype(jnp.float32)
    m = jnp.zeros((6, 6))
    grad = jax.jit(jax.grad(objective))
    for i in range(steps):
        m = m - 0.1 * grad(m, observed, mask, 0.05)
        print("step", i, float(objective(m, observed, mask, 0.05)))


if __name__ == "__main__":
    complete()
