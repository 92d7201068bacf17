# Reproducer for: Enzyme-JAX: no reverse-mode adjoint for `stablehlo.reduce_window` (`jnp.cumprod`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.reduce_window
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from survival_cumprod.py: 223 -> 59 tokens in 134 s (210 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda w, features, observed: jax.numpy.mean(jax.numpy.cumprod(w)))))(jax.numpy.zeros(2), 1.0, 0)
