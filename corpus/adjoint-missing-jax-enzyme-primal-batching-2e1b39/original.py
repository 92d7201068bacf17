"""Sensitivity analysis of a small network: the full Jacobian of the outputs with respect to the
inputs, computed with jax.jacrev over an Enzyme-JAX function."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def init(key):
    k1, k2 = jax.random.split(key)
    return jax.random.normal(k1, (4, 6)) * 0.5, jax.random.normal(k2, (6, 3)) * 0.5


@enzyme_jax_ir()
def network(x, w1, w2):
    return jnp.tanh(jnp.tanh(x @ w1) @ w2)


def sensitivity(x, params):
    jac = jax.jacrev(network)(x, *params)
    return jnp.abs(jac).sum(axis=0)


def main():
    params = init(jax.random.PRNGKey(0))
    x = jnp.linspace(-1.0, 1.0, 4)
    s = sensitivity(x, params)
    print("most influential input:", int(jnp.argmax(s)), s)


if __name__ == "__main__":
    main()
