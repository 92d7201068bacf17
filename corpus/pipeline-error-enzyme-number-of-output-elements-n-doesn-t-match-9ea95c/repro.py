# Reproducer for: Enzyme-JAX: the pass pipeline fails
# Signature: pipeline-error: source=enzyme op= message=number of output elements (N) doesn't match expected number of elements (N)
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from finding.py: 185 -> 44 tokens in 47 s (136 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
enzyme_jax_ir()(lambda x: jax.numpy.unique(x, size=1))(jax.numpy.asarray([0.0, 0.0, 0.0]))
