"""A retrieval loss over the approximately largest similarity scores (jax.lax.approx_max_k, as
used for nearest-neighbour search on accelerators); gradients from Enzyme-JAX."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def retrieve(query, keys, k=3):
    scores = keys @ query
    return jax.lax.approx_max_k(scores, k)[0]


@enzyme_jax_ir()
def loss(query, keys):
    return -jnp.sum(jax.nn.log_sigmoid(retrieve(query, keys)))


def main():
    key = jax.random.PRNGKey(0)
    keys = jax.random.normal(key, (16, 4))
    query = jnp.ones(4) * 0.1
    step = jax.jit(jax.grad(loss))
    for i in range(3):
        query = query - 0.1 * step(query, keys)
        print("step", i, query)


if __name__ == "__main__":
    main()
