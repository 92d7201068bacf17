# Reproducer for: Enzyme-JAX: no adjoint for `stablehlo.optimization_barrier`
# Signature: adjoint-missing: source=enzyme op=stablehlo.optimization_barrier
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from finding.py: 186 -> 34 tokens in 20 s (95 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
derivative = jax.grad(enzyme_jax_ir()(jax.lax.optimization_barrier))
jax.jit(derivative)(1.0)
