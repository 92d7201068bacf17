# Reproducer for: JAX: `TypeError` raised in `jax/_src/interpreters/mlir.py:_ir_constant`
# Signature: jax-error: library=jax type=TypeError raised-in=jax/_src/interpreters/mlir.py:_ir_constant message=No constant handler for type: <class <q>>
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from special-exp1-hessian-jax-float32.py: 164 -> 17 tokens in 23 s (62 candidates tested).
import jax
jax.hessian(jax.scipy.special.exp1)(1.0)
