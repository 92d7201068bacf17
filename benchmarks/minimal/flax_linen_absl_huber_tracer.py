import jax
jax.jit(bool)(1.0)
