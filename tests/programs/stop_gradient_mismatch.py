"""Enzyme-JAX differentiates through `jax.lax.stop_gradient` (enzyme-ad 0.0.16): its gradient is 1
where JAX's is 0. The program compares the two and fails."""
import jax
from enzyme_ad.jax import enzyme_jax_ir

td_target = jax.lax.stop_gradient
enzyme = jax.jit(jax.grad(enzyme_jax_ir()(td_target)))(1.0)
plain = jax.grad(td_target)(1.0)
assert jax.numpy.allclose(enzyme, plain), "gradients disagree"
