"""Fit the launch angle of a projectile so that it lands at a target distance on a slope; the
height along the slope uses tan of the angle. Gradients from Enzyme-JAX."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir

G = 9.81


def height(angle, speed, x):
    return x * jnp.tan(angle) - G * x ** 2 / (2 * speed ** 2 * jnp.cos(angle) ** 2)


@enzyme_jax_ir()
def miss(angle, speed, xs, target):
    return jnp.mean((height(angle, speed, xs) - target) ** 2)


def main():
    xs = jnp.linspace(1.0, 5.0, 5)
    target = 0.2 * xs
    angle, speed = jnp.array(0.6), jnp.array(8.0)
    grad = jax.jit(jax.grad(miss))
    for i in range(3):
        angle = angle - 0.01 * grad(angle, speed, xs, target)
        print("step", i, float(angle))


if __name__ == "__main__":
    main()
