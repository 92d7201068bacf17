# Reproducer for: Enzyme-JAX: the pass pipeline fails
# Signature: pipeline-error: source=enzyme op= message=AutoDiffScatterRev only supports Setindex, AddScatter, SubScatter and MulScatter operations
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from finding.py: 197 -> 65 tokens in 24 s (166 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda x: jax.numpy.sum(x.at[jax.numpy.array([0, 0])].max(0.0)))))(jax.numpy.ones(1))
