"""Enzyme-JAX cannot differentiate a `while` with no known trip count, from
`jax.scipy.special.gammainc` (enzyme-ad 0.0.16; the corpus case regex-whileop-…)."""
import jax
from enzyme_ad.jax import enzyme_jax_ir

def fit():
    log_rate = jax.jit(jax.grad(enzyme_jax_ir()(lambda log_rate, xs, empirical: jax.scipy.special.gammainc(2.0, log_rate))))(1.0, 1.0, 1.0)
fit()
