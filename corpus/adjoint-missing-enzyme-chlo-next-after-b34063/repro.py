# Reproducer for: Enzyme-JAX: no adjoint for `chlo.next_after`
# Signature: adjoint-missing: source=enzyme op=chlo.next_after
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from nextafter_margin.py: 222 -> 49 tokens in 96 s (142 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
w = jax.jit(jax.grad(enzyme_jax_ir()(lambda w, x, y: jax.numpy.nextafter(w, 1.0))))(1.0, 1.0, 0)
