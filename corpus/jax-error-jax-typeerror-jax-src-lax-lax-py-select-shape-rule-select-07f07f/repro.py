# Reproducer for: JAX: `lax.clamp` with a scalar `min` and an array operand cannot be differentiated with respect to the bound (`TypeError` in `_select_shape_rule`)
# Signature: jax-error: library=jax type=TypeError raised-in=jax/_src/lax/lax.py:_select_shape_rule message=select cases must have the same shapes, got <value>
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Reduced by reducer from clamp_scalar_bound_jvp.py: 82 -> 32 tokens in 35 s (78 candidates tested).
import jax
jax.grad(lambda lo: jax.lax.clamp(lo, jax.numpy.ones(0), 2.0))(0.7)
