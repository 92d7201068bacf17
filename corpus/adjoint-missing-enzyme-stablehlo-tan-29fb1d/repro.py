# Reproducer for: Enzyme-JAX: no adjoint for `stablehlo.tan`
# Signature: adjoint-missing: source=enzyme op=stablehlo.tan
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from pendulum_tan.py: 191 -> 51 tokens in 38 s (140 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
angle = jax.jit(jax.grad(enzyme_jax_ir()(lambda angle, speed, xs, target: jax.numpy.tan(angle))))(1.0, 1.0, 1.0, 0.2)
