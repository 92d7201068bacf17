# Reproducer for: Enzyme-JAX: no adjoint for `chlo.top_k`
# Signature: adjoint-missing: source=enzyme op=chlo.top_k
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from sparse_attention_topk.py: 242 -> 62 tokens in 171 s (246 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
wq = jax.jit(jax.grad(enzyme_jax_ir()(lambda wq, x: jax.numpy.mean(jax.lax.top_k(wq, 1)[0]))))(jax.numpy.eye(1), 1.0)
