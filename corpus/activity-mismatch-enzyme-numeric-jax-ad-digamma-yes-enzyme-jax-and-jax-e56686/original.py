"""Maximum-likelihood fit of a Dirichlet concentration; the gradient of the log-likelihood
involves digamma, whose gradient (trigamma) Enzyme-JAX gets wrong. The script compares
Enzyme-JAX's gradient with JAX's own before training."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def score(alpha, mean_log_p):
    # the score function of the Dirichlet log-likelihood
    return jax.scipy.special.digamma(jnp.sum(alpha)) - jax.scipy.special.digamma(alpha) + mean_log_p


def objective(alpha, mean_log_p):
    return jnp.sum(score(alpha, mean_log_p) ** 2)


def fit(steps=3):
    p = jnp.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3], [0.3, 0.3, 0.4]])
    mean_log_p = jnp.mean(jnp.log(p), axis=0)
    alpha = jnp.array([1.5, 2.0, 2.5])
    g_enzyme = jax.jit(jax.grad(enzyme_jax_ir()(objective)))(alpha, mean_log_p)
    g_jax = jax.grad(objective)(alpha, mean_log_p)
    if not jnp.allclose(g_enzyme, g_jax, rtol=1e-3):
        print("enzyme:", g_enzyme, "jax:", g_jax)
        raise SystemExit("Enzyme-JAX and JAX gradients of the Dirichlet objective differ")
    for i in range(steps):
        alpha = alpha - 0.05 * g_enzyme
        print("step", i, alpha)


if __name__ == "__main__":
    fit()
