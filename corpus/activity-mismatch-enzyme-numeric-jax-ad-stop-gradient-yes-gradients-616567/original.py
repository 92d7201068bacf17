"""A TD-learning update: the bootstrap target is wrapped in stop_gradient, so only the online
prediction should be differentiated. The gradient comes from Enzyme-JAX; the script compares it
with JAX's own."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir

GAMMA = 0.9


def value(w, s):
    return jnp.tanh(s @ w)


def td_loss(w, s, r, s_next):
    target = r + GAMMA * jax.lax.stop_gradient(value(w, s_next))
    return jnp.mean((value(w, s) - target) ** 2)


def main():
    key = jax.random.PRNGKey(0)
    w = jax.random.normal(key, (3,)) * 0.5
    s = jax.random.normal(key, (6, 3))
    s_next = jax.random.normal(jax.random.PRNGKey(1), (6, 3))
    r = jnp.ones(6)
    g_enzyme = jax.jit(jax.grad(enzyme_jax_ir()(td_loss)))(w, s, r, s_next)
    g_jax = jax.grad(td_loss)(w, s, r, s_next)
    print("enzyme", g_enzyme, "jax", g_jax)
    assert jnp.allclose(g_enzyme, g_jax, rtol=1e-3), "gradients disagree"
    for i in range(3):
        w = w - 0.1 * g_enzyme


if __name__ == "__main__":
    main()
