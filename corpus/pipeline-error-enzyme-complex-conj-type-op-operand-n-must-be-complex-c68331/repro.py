# Reproducer for: Enzyme-JAX: verifier error on complex arithmetic (`complex.conj` rejects a `tensor<complex<f32>>` operand)
# Signature: pipeline-error: source=enzyme op=complex.conj message=<type> op operand #N must be complex type with floating-point elements, but got <type>
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from complex_filter.py: 172 -> 57 tokens in 84 s (221 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir

def main():
    phase = jax.jit(jax.grad(enzyme_jax_ir()(lambda phase, x, target: jax.numpy.real(1j * phase))))(1.0, 0.0, 0.0)
main()
