"""A small training loop run with `XLA_FLAGS=--xla_dump_to=DIR`: an MLP step under `jit`, a jitted
evaluation, then a rank-7 feature-moment under `jit` that kills the process with SIGSEGV on CPU
(jaxlib 0.10.2, jax-ml/jax#40412). The dump folder holds every module XLA compiled, as HLO text."""
import jax
import jax.numpy as jnp


def init(key):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (8, 16)) * 0.1, "b1": jnp.zeros(16),
            "w2": jax.random.normal(k2, (16, 1)) * 0.1, "b2": jnp.zeros(1)}


def predict(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return (h @ params["w2"] + params["b2"])[:, 0]


@jax.jit
def step(params, x, y):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((predict(p, x) - y) ** 2))(params)
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss


@jax.jit
def evaluate(params, x, y):
    return jnp.mean(jnp.abs(predict(params, x) - y))


@jax.jit
def moments(a, b):
    return jnp.sum(a * b, axis=3)


key = jax.random.PRNGKey(0)
params = init(key)
x = jax.random.normal(key, (32, 8))
y = jnp.sin(x[:, 0])
for _ in range(3):
    params, loss = step(params, x, y)
print("loss", float(loss), "eval", float(evaluate(params, x, y)))
u = jnp.ones((3, 1, 2, 2, 8, 8, 8), jnp.float32)
print(moments(u, u).block_until_ready().shape)
