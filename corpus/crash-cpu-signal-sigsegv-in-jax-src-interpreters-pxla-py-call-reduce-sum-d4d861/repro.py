# Reproducer for: XLA:CPU: SIGSEGV in a rank-7 multiply-and-reduce under jit (jax-ml/jax#40412)
# Signature: crash: platform=cpu how=signal detail=SIGSEGV in jax/_src/interpreters/pxla.py:__call__ op=reduce_sum
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from rank7_sum_segfault.py: 111 -> 61 tokens in 151 s (128 candidates tested).
import jax
jax.jit(lambda a, b: jax.numpy.sum(a * b, axis=0))(1.0, jax.random.normal(jax.random.PRNGKey(0), (2, 1, 2, 2, 8, 8, 8)))
