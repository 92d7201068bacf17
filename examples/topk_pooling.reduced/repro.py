# Reproducer for: Enzyme-JAX: no adjoint for `chlo.top_k`
# Signature: adjoint-missing: source=enzyme op=chlo.top_k
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from topk_pooling.py: 451 -> 58 tokens in 227 s (285 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda a: jax.numpy.sum(jax.lax.top_k(a, k=1)[0]))))(jax.numpy.ones(1))
