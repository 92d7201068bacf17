"""A regulariser computed by NumPy on the host through jax.pure_callback, inside a loss whose
gradient comes from Enzyme-JAX."""
import numpy as np

import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def host_penalty(w):
    return np.asarray(np.sum(np.abs(w)) * 0.01, dtype=np.float32)


def penalty(w):
    return jax.pure_callback(host_penalty, jax.ShapeDtypeStruct((), jnp.float32), w)


@enzyme_jax_ir()
def loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2) + penalty(w)


def main():
    x = jnp.linspace(-1, 1, 15).reshape(5, 3)
    y = jnp.arange(5.0)
    w = jnp.zeros(3)
    step = jax.jit(jax.grad(loss))
    for i in range(3):
        w = w - 0.1 * step(w, x, y)
        print("step", i, w)


if __name__ == "__main__":
    main()
