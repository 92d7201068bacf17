"""A two-layer MLP trained with simulated half-precision activations (quantization-aware
training). Gradients come from Enzyme-JAX."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def init(key, sizes=(6, 8, 3)):
    keys = jax.random.split(key, len(sizes) - 1)
    return [(jax.random.normal(k, (m, n)) * 0.2, jnp.zeros(n)) for k, m, n in zip(keys, sizes[:-1], sizes[1:])]


def quantize(h):
    # simulate fp16 storage of activations
    return jax.lax.reduce_precision(h, exponent_bits=5, mantissa_bits=10)


def forward(params, x):
    for w, b in params[:-1]:
        x = quantize(jax.nn.relu(x @ w + b))
    w, b = params[-1]
    return x @ w + b


@enzyme_jax_ir()
def loss(params, x, y):
    logits = forward(params, x)
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))


def main():
    key = jax.random.PRNGKey(0)
    params = init(key)
    x = jax.random.normal(key, (16, 6))
    y = jax.nn.one_hot(jnp.arange(16) % 3, 3)
    step = jax.jit(jax.grad(loss))
    for i in range(3):
        g = step(params, x, y)
        params = jax.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g)
        print("step", i, float(loss(params, x, y)))


if __name__ == "__main__":
    main()
