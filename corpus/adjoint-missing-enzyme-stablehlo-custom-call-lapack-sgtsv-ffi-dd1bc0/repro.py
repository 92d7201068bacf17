# Reproducer for: Enzyme-JAX: no adjoint for `stablehlo.custom_call` (`lapack_sgtsv_ffi`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=lapack_sgtsv_ffi
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from finding.py: 242 -> 84 tokens in 22 s (210 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda a: jax.numpy.sum(jax.lax.linalg.tridiagonal_solve(jax.numpy.ones(1), jax.numpy.ones(1), jax.numpy.ones(1), a)))))(jax.numpy.ones((1, 1)))
