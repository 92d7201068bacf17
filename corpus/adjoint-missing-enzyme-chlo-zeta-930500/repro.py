# Reproducer for: Enzyme-JAX: no adjoint for `chlo.zeta`
# Signature: adjoint-missing: source=enzyme op=chlo.zeta
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from zipf_zeta.py: 193 -> 41 tokens in 63 s (162 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda q: jax.scipy.special.zeta(2.0, q))))(1.0)
