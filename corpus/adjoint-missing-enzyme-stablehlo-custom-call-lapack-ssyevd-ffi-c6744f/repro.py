# Reproducer for: Enzyme-JAX: no adjoint for the LAPACK eigh custom call `lapack_ssyevd_ffi` (`jnp.linalg.eigh`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=lapack_ssyevd_ffi
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from spectral_penalty.py: 225 -> 82 tokens in 237 s (248 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
key = jax.random.PRNGKey(0)
w = jax.jit(jax.grad(enzyme_jax_ir()(lambda w, x, y, lam: jax.numpy.linalg.eigh(w)[0][0])))(jax.random.normal(key, (1, 1)), key, 0, 0.1)
