"""Unit vectors of rows, one of them zero, in a training loop: `z / norm(z)` is 0/0 at the first
step, and the norm's gradient at zero is NaN, so with the division fixed the next step fails."""
import jax
import jax.numpy as jnp

x = jnp.array([[1.0, 2.0], [0.0, 0.0]])
w = jnp.ones(2)


def loss(w):
    z = x * w
    return jnp.sum(z / jnp.linalg.norm(z, axis=1, keepdims=True))


for step in range(3):
    value, grad = jax.value_and_grad(loss)(w)
    assert jnp.isfinite(value), step
    w = w - 0.1 * grad
