# Reproducer for: Enzyme-JAX: no adjoint for the LAPACK Schur custom call `lapack_cgees_ffi` (`jax.scipy.linalg.sqrtm`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=lapack_cgees_ffi
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from covariance_sqrtm.py: 232 -> 60 tokens in 220 s (316 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda factor: jax.numpy.trace(jax.numpy.real(jax.scipy.linalg.sqrtm(factor))))))(jax.numpy.eye(1))
