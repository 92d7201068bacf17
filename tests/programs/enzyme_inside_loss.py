"""Enzyme-JAX inside a larger differentiated loss: `jax.grad(loss)` where `loss` calls an `enzyme_jax_ir`
function whose `digamma` derivative is wrong; the program compares with JAX's AD of the same loss."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


@enzyme_jax_ir()
def log_normaliser(alpha):
    return jax.scipy.special.gammaln(alpha) - jax.scipy.special.digamma(alpha)


def loss(alpha, x):
    return jnp.sum(log_normaliser(alpha) * 2.0 + alpha * x)


def reference(alpha, x):
    return jnp.sum((jax.scipy.special.gammaln(alpha) - jax.scipy.special.digamma(alpha)) * 2.0 + alpha * x)


alpha = jnp.array([1.5, 2.5, 3.5])
x = jnp.array([0.1, 0.2, 0.3])
g = jax.jit(jax.grad(loss))(alpha, x)
r = jax.grad(reference)(alpha, x)
print(g, r)
if not jnp.allclose(g, r, rtol=1e-3):
    raise SystemExit("Enzyme gradient disagrees")
