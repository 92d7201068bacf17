"""Sparse attention that keeps only the k largest attention scores per query (top-k attention),
trained with Enzyme-JAX gradients."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir

K = 2


def topk_attention(q, k, v):
    scores = q @ k.T / jnp.sqrt(q.shape[-1])
    top, idx = jax.lax.top_k(scores, K)
    weights = jax.nn.softmax(top, axis=-1)
    return jnp.einsum("qk,qkd->qd", weights, v[idx])


@enzyme_jax_ir()
def loss(wq, x, target):
    out = topk_attention(x @ wq, x, x)
    return jnp.mean((out - target) ** 2)


def main():
    key = jax.random.PRNGKey(0)
    x = jax.random.normal(key, (5, 4))
    wq = jnp.eye(4)
    target = jnp.zeros((5, 4))
    step = jax.jit(jax.grad(loss))
    for i in range(3):
        wq = wq - 0.1 * step(wq, x, target)
        print("step", i, float(loss(wq, x, target)))


if __name__ == "__main__":
    main()
