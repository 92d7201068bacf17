# Reproducer for: Enzyme-JAX: no adjoint for the LAPACK SVD custom call `lapack_sgesdd_ffi` (`jnp.linalg.svd`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=lapack_sgesdd_ffi
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from nuclear_norm_svd.py: 225 -> 75 tokens in 145 s (221 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
m = jax.jit(jax.grad(enzyme_jax_ir()(lambda m, observed, mask, lam: jax.numpy.sum(jax.numpy.linalg.svd(m, compute_uv=False)))))(jax.numpy.zeros((1, 1)), 0, 1.0, 0.0)
