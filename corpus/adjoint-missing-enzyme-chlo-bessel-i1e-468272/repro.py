# Reproducer for: Enzyme-JAX: no adjoint for `chlo.bessel_i1e`
# Signature: adjoint-missing: source=enzyme op=chlo.bessel_i1e
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from von_mises_bessel.py: 184 -> 31 tokens in 57 s (134 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(jax.lax.bessel_i1e)))(1.0)
