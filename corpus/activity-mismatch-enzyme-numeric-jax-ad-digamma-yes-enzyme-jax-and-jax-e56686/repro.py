# Reproducer for: Enzyme-JAX: gradient of `digamma` disagrees with JAX's AD
# Signature: activity-mismatch: source=enzyme kind=numeric reference=jax-ad op=digamma program-compares=yes program-exit=Enzyme-JAX and JAX gradients of the Dirichlet objective differ
# Run: REDUCER_CHECK_GRADIENTS=1 python -m reducer.harness repro.py   # or: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1045-x86_64-with-glibc2.36
# Reduced by reducer from original.py: 242 -> 60 tokens in 69 s (111 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
if not jax.numpy.allclose(jax.jit(jax.grad(enzyme_jax_ir()(jax.lax.digamma)))(1.0), jax.grad(jax.lax.digamma)(1.0)):
    raise SystemExit('Enzyme-JAX and JAX gradients of the Dirichlet objective differ')
