"""A hinge loss that nudges its margin to the next representable float, so that ties never count
as correct; trained with Enzyme-JAX gradients."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def score(w, x):
    return jnp.tanh(x @ w)


def margin(s):
    # the smallest float strictly above s
    return jnp.nextafter(s, jnp.inf)


@enzyme_jax_ir()
def hinge_loss(w, x, y):
    s = score(w, x)
    return jnp.mean(jax.nn.relu(1.0 - y * margin(s)))


def train(steps=3, lr=0.1):
    key = jax.random.PRNGKey(1)
    w = jax.random.normal(key, (4,)) * 0.1
    x = jax.random.normal(key, (10, 4))
    y = jnp.where(jnp.arange(10) % 2 == 0, 1.0, -1.0)
    grad = jax.jit(jax.grad(hinge_loss))
    for i in range(steps):
        w = w - lr * grad(w, x, y)
        print("step", i, w)
    return w


if __name__ == "__main__":
    train()
