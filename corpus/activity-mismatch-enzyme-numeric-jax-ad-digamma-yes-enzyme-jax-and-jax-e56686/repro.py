# Reproducer for: Enzyme-JAX: wrong gradient through `digamma` (disagrees with JAX's AD)
# Signature: activity-mismatch: source=enzyme kind=numeric reference=jax-ad op=digamma program-compares=yes program-exit=Enzyme-JAX and JAX gradients of the Dirichlet objective differ
# Run: REDUCER_CHECK_GRADIENTS=1 python -m reducer.harness repro.py   # or: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from digamma_mle.py: 242 -> 78 tokens in 314 s (185 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
objective = lambda alpha, mean_log_p: (lambda alpha: jax.scipy.special.digamma(alpha))(alpha)

def fit():
    jax.jit(jax.grad(enzyme_jax_ir()(objective)))(1.0, 0.6)
    jax.grad(objective)(1.0, 0.6)
    raise SystemExit('Enzyme-JAX and JAX gradients of the Dirichlet objective differ')
fit()
