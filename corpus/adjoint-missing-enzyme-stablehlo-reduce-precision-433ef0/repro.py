# Reproducer for: Enzyme-JAX: no adjoint for `stablehlo.reduce_precision`
# Signature: adjoint-missing: source=enzyme op=stablehlo.reduce_precision
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from quantized_mlp.py: 360 -> 101 tokens in 311 s (295 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir

@enzyme_jax_ir()
def loss(params, x, y):
    for w, b in params:
        x = jax.lax.reduce_precision(b, exponent_bits=1, mantissa_bits=0)
    return x
jax.jit(jax.grad(loss))([(1.0, 1.0) for k, m, n in zip(jax.random.PRNGKey(0), (0,), (0,))], 1.0, 0)
