"""A "straight-through" activation with a hand-written custom_jvp rule; the rule squares the
tangent by mistake (it is not linear in the tangent), and training with jax.grad fails inside JAX."""
import jax
import jax.numpy as jnp


@jax.custom_jvp
def soft_round(x):
    return jnp.round(x)


@soft_round.defjvp
def soft_round_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return soft_round(x), t * t


def model(w, x):
    return soft_round(x @ w)


def loss(w, x, y):
    return jnp.mean((model(w, x) - y) ** 2)


def main():
    key = jax.random.PRNGKey(0)
    x = jax.random.normal(key, (8, 3))
    w = jnp.ones(3)
    y = jnp.arange(8.0) % 3
    for i in range(3):
        w = w - 0.1 * jax.grad(loss)(w, x, y)
        print("step", i, w)


if __name__ == "__main__":
    main()
