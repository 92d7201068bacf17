"""A distribution-matching loss that compares sorted samples (a 1-D Wasserstein distance), with
gradients from Enzyme-JAX."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def generator(params, noise):
    return noise * jnp.exp(params["log_scale"]) + params["shift"]


@enzyme_jax_ir()
def wasserstein(params, noise, data):
    samples = jnp.sort(generator(params, noise))
    return jnp.mean(jnp.abs(samples - jnp.sort(data)))


def main():
    key = jax.random.PRNGKey(0)
    noise = jax.random.normal(key, (32,))
    data = 2.0 * jax.random.normal(jax.random.PRNGKey(1), (32,)) + 1.0
    params = {"log_scale": jnp.array(0.0), "shift": jnp.array(0.0)}
    step = jax.jit(jax.grad(wasserstein))
    for i in range(3):
        g = step(params, noise, data)
        params = jax.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g)
        print("step", i, params)


if __name__ == "__main__":
    main()
