# Reproducer for: JAX: `NotImplementedError` raised in `jax/_src/lax/slicing.py:_scatter_mul_jvp_rhs`
# Signature: jax-error: library=jax type=NotImplementedError raised-in=jax/_src/lax/slicing.py:_scatter_mul_jvp_rhs message=scatter_mul gradients are only implemented if <q>
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from finding.py: 178 -> 40 tokens in 24 s (123 candidates tested).
import jax
jax.grad(lambda x: x.at[jax.numpy.array([0])].multiply(x))(jax.numpy.ones(1))
