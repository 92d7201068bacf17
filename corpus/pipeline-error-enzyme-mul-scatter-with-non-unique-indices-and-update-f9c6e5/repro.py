# Reproducer for: Enzyme-JAX: the pass pipeline fails
# Signature: pipeline-error: source=enzyme op= message=Mul scatter with non-unique indices and update requires adjoint. This is currently unsupported
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from finding.py: 199 -> 65 tokens in 24 s (161 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda x: jax.numpy.sum(x.at[jax.numpy.array([0, 0])].multiply(x)))))(jax.numpy.ones(1))
