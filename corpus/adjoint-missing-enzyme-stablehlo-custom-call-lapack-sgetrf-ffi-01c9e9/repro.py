# Reproducer for: Enzyme-JAX: no adjoint for the LAPACK LU custom call `lapack_sgetrf_ffi` (`jnp.linalg.slogdet`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=lapack_sgetrf_ffi
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from logdet_flow.py: 216 -> 55 tokens in 182 s (229 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
w = jax.jit(jax.grad(enzyme_jax_ir()(lambda w, x: jax.numpy.linalg.slogdet(w)[1])))(jax.numpy.eye(3), 1.0)
