# Reproducer for: Enzyme-JAX: no adjoint for `stablehlo.custom_call` (`lapack_sgeev_ffi`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=lapack_sgeev_ffi
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from finding.py: 209 -> 67 tokens in 45 s (161 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda a: jax.numpy.sum(jax.lax.real(jax.lax.linalg.eig(a)[0])))))(jax.numpy.ones((1, 1)))
