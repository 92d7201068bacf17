"""An entropy bonus guarded by `where`: p * log(p) at p == 0 is masked forward, but the derivative of
log at 0 is inf, and the `where` multiplies it by 0."""
import jax
import jax.numpy as jnp


def entropy(logits, valid):
    p = jax.nn.softmax(jnp.where(valid, logits, -jnp.inf))
    return -jnp.sum(jnp.where(p > 0, p * jnp.log(p), 0.0))


g = jax.grad(entropy)(jnp.array([0.5, -1.0, 2.0]), jnp.array([True, True, False]))
assert jnp.isfinite(g).all(), f"entropy gradient {g}"
