# Reproducer for: Enzyme-JAX: gradient of `polygamma` disagrees with JAX's AD
# Signature: activity-mismatch: source=enzyme kind=numeric reference=jax-ad op=polygamma
# Run: REDUCER_CHECK_GRADIENTS=1 python -m reducer.harness repro.py   # or: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from special-polygamma-grad-enzyme-float32.py: 185 -> 41 tokens in 58 s (101 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda x: jax.scipy.special.polygamma(0, x))))(1.0)
