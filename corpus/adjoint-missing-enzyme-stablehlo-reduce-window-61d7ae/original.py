"""A discrete-time survival model: the survival curve is the cumulative product of per-step
survival probabilities; fitted with Enzyme-JAX gradients."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir

T = 6


def hazards(w, features):
    return jax.nn.sigmoid(features @ w)


def survival(h):
    return jnp.cumprod(1.0 - h, axis=-1)


@enzyme_jax_ir()
def loss(w, features, observed):
    s = survival(hazards(w, features))
    return jnp.mean((s - observed) ** 2)


def main():
    key = jax.random.PRNGKey(0)
    features = jax.random.normal(key, (4, 3))
    w = jnp.zeros((3, T))
    observed = jnp.linspace(1.0, 0.2, T)[None, :].repeat(4, 0)
    grad = jax.jit(jax.grad(loss))
    for i in range(3):
        w = w - 0.5 * grad(w, features, observed)
        print("step", i, float(loss(w, features, observed)))


if __name__ == "__main__":
    main()
