# Reproducer for: Enzyme-JAX: pass pipeline fails on `complex.add`: <type> op operand #N must be complex type with floating-point elements, but got 
# Signature: pipeline-error: source=enzyme op=complex.add message=<type> op operand #N must be complex type with floating-point elements, but got <type>
# Run: python repro.py
# Versions: Python ?, ?
# Reduced by reducer from complex_grad.py: 105 -> 43 tokens in 54 s (88 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(lambda z: jax.numpy.real(enzyme_jax_ir()(lambda z: z)(z))))(1j)
