# Reproducer for: Enzyme-JAX: no batching rule for `enzyme_primal` (`jax.jacrev` of an `enzyme_jax_ir` function)
# Signature: adjoint-missing: source=jax op=enzyme_primal rule=batching
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from jacobian_sensitivity.py: 196 -> 67 tokens in 255 s (364 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir

def sensitivity(x, params):
    jax.jacrev(enzyme_jax_ir()(lambda x, w1, w2: x))(x, *params)

def main():
    sensitivity(jax.numpy.linspace(1.0, 1.0), (1.0, 1.0))
main()
