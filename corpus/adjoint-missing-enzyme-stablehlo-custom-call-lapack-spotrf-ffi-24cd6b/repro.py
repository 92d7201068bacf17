# Reproducer for: Enzyme-JAX: no adjoint for the LAPACK Cholesky custom call `lapack_spotrf_ffi` (`jnp.linalg.cholesky`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=lapack_spotrf_ffi
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from gp_cholesky.py: 246 -> 55 tokens in 129 s (259 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda log_scale: jax.numpy.sum(jax.numpy.linalg.cholesky(log_scale + jax.numpy.eye(1))))))(0.0)
