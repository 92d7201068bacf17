# Reproducer for: Enzyme-JAX: wrong gradient: `jax.lax.stop_gradient` is differentiated through
# Signature: activity-mismatch: source=enzyme kind=numeric reference=jax-ad op=stop_gradient program-compares=yes program-exit=gradients disagree
# Run: REDUCER_CHECK_GRADIENTS=1 python -m reducer.harness repro.py   # or: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from target_network.py: 255 -> 54 tokens in 156 s (251 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
td_loss = jax.lax.stop_gradient
assert jax.numpy.allclose(jax.jit(jax.grad(enzyme_jax_ir()(td_loss)))(1.0), jax.grad(td_loss)(1.0)), 'gradients disagree'
