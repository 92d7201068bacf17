# Reproducer for: Enzyme-JAX: internal `KeyError` in `enzyme_jvp` on second-order gradients
# Signature: crash: platform=cpu how=internal-error detail=KeyError in enzyme_ad/jax/primitives.py:enzyme_jvp
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from curvature_penalty.py: 263 -> 48 tokens in 81 s (196 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir

def main():
    jax.grad(lambda x: jax.grad(enzyme_jax_ir()(lambda x, w: x))(x, 1.0))(1.0)
main()
