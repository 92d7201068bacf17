# Reproducer for: Enzyme-JAX: no adjoint for the LAPACK QR custom call `lapack_sgeqrf_ffi` (`jnp.linalg.qr`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=lapack_sgeqrf_ffi
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from orthogonal_qr.py: 201 -> 79 tokens in 192 s (384 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
a = jax.jit(jax.grad(enzyme_jax_ir()(lambda a, x, y: jax.numpy.mean(jax.numpy.linalg.qr(a)[0]))))(jax.random.normal(jax.random.PRNGKey(0), (1, 1)), 1.0, 1.0)
