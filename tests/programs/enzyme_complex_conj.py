"""Enzyme-JAX's pipeline fails verifying complex arithmetic: `complex.conj` rejects its
`tensor<complex<f32>>` operand (enzyme-ad 0.0.16; the corpus case regex-complex-conj-…)."""
import jax
from enzyme_ad.jax import enzyme_jax_ir

def main():
    phase = jax.jit(jax.grad(enzyme_jax_ir()(lambda phase, x, target: jax.numpy.real(1j * phase))))(1.0, 0.0, 0.0)
main()
