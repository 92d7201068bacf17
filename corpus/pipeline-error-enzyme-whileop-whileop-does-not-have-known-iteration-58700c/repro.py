# Reproducer for: Enzyme-JAX: cannot differentiate a `while` with no known trip count (`jax.scipy.special.gammainc`)
# Signature: pipeline-error: source=enzyme op=WhileOp message=WhileOp does not have known iteration count for cache removal
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from gamma_cdf_fit.py: 175 -> 59 tokens in 146 s (199 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir

def fit():
    log_rate = jax.jit(jax.grad(enzyme_jax_ir()(lambda log_rate, xs, empirical: jax.scipy.special.gammainc(2.0, log_rate))))(1.0, 1.0, 1.0)
fit()
