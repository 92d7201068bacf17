# A small fitting script: normalise the data, a jitted loss and its gradient, then a rank-7
# contraction that kills the process. With jaxlib 0.10.2 XLA:CPU dies with SIGSEGV when it runs
# `jnp.sum(a * b, axis=3)` on (3, 1, 2, 2, 8, 8, 8) float32 under jit (jax-ml/jax#40412).
# Run it with XLA_FLAGS=--xla_dump_to=DIR: every module is dumped when it is compiled, so the
# crashing one is in DIR too.
import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def normalise(x):
    return (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-6)


def loss(w, x, y):
    pred = jnp.tanh(x @ w)
    return jnp.mean((pred - y) ** 2)


def pair_energy(a, b):
    return jnp.sum(a * b, axis=3)


rng = np.random.default_rng(0)
x = normalise(rng.standard_normal((8, 3)).astype(np.float32))
y = rng.standard_normal((8, 2)).astype(np.float32)
w = np.full((3, 2), 0.1, np.float32)
value, grad = jax.jit(jax.value_and_grad(loss))(w, x, y)
print("loss", float(value), "grad norm", float(jnp.linalg.norm(grad)))

shape = (3, 1, 2, 2, 8, 8, 8)
a = rng.standard_normal(shape).astype(np.float32)
b = rng.standard_normal(shape).astype(np.float32)
print(jax.jit(pair_energy)(a, b).block_until_ready().shape)
