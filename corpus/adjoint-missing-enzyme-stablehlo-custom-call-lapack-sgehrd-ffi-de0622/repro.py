# Reproducer for: Enzyme-JAX: no adjoint for `stablehlo.custom_call` (`lapack_sgehrd_ffi`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=lapack_sgehrd_ffi
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from finding.py: 207 -> 60 tokens in 45 s (149 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda a: jax.numpy.sum(jax.lax.linalg.hessenberg(a)[0]))))(jax.numpy.ones((1, 1)))
