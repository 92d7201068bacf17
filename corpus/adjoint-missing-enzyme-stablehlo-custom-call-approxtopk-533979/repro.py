# Reproducer for: Enzyme-JAX: no adjoint for the `ApproxTopK` custom call (`jax.lax.approx_max_k`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=ApproxTopK
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from retrieval_approx_topk.py: 168 -> 62 tokens in 99 s (205 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
query = jax.jit(jax.grad(enzyme_jax_ir()(lambda query, keys: jax.numpy.sum(jax.lax.approx_max_k(query, 1)[0]))))(jax.numpy.ones(1), 1.0)
