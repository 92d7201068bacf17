"""A physics-informed fit that penalises curvature: the loss uses the second derivative of the
model, obtained by differentiating an Enzyme-JAX gradient again."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


@enzyme_jax_ir()
def model(x, w):
    return jnp.sum(w[0] * jnp.sin(w[1] * x) + w[2] * x ** 2)


def slope(x, w):
    return jax.grad(model)(x, w)


def curvature(x, w):
    return jax.grad(lambda x: jnp.sum(slope(x, w)))(x)


def loss(w, xs, ys):
    fit = jnp.mean((jax.vmap(lambda x: model(x, w))(xs) - ys) ** 2)
    return fit + 0.01 * jnp.mean(curvature(xs, w) ** 2)


def main():
    xs = jnp.linspace(-1.0, 1.0, 6)
    ys = jnp.sin(2 * xs)
    w = jnp.array([1.0, 1.5, 0.1])
    print("curvature:", curvature(xs, w))
    for i in range(2):
        w = w - 0.1 * jax.grad(loss)(w, xs, ys)
        print("step", i, w)


if __name__ == "__main__":
    main()
