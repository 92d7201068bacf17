# Reproducer for: Enzyme-JAX: no adjoint for the LAPACK triangular-solve custom call `lapack_strsm_ffi` (`jax.scipy.linalg.solve_triangular`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=lapack_strsm_ffi
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from whitening_trisolve.py: 242 -> 75 tokens in 222 s (294 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda l, x: jax.numpy.mean(jax.scipy.linalg.solve_triangular(l, x)))))(jax.numpy.eye(1), jax.random.normal(jax.random.PRNGKey(0), 1))
