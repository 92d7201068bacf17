"""Shape a non-symmetric interaction matrix so that its dominant eigenvector points along a target
direction (a mode-shaping loss)."""
import jax
import jax.numpy as jnp


def dominant_mode(m):
    vals, vecs = jnp.linalg.eig(m)
    i = jnp.argmax(jnp.abs(vals))
    v = vecs[:, i]
    return jnp.abs(v) / jnp.linalg.norm(v)


def loss(m, target):
    return jnp.sum((dominant_mode(m) - target) ** 2)


def main():
    m = jnp.array([[2.0, 0.5, 0.1], [0.2, 1.0, 0.3], [0.0, 0.4, 0.5]])
    target = jnp.array([0.6, 0.6, 0.52])
    for i in range(3):
        g = jax.grad(loss)(m, target)
        m = m - 0.1 * jnp.real(g)
        print("step", i, loss(m, target))


if __name__ == "__main__":
    main()
