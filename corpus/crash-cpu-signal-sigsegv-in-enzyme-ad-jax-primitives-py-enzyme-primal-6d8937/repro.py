# Reproducer for: Enzyme-JAX: SIGSEGV in reverse mode through `jnp.sort`
# Signature: crash: platform=cpu how=signal detail=SIGSEGV in enzyme_ad/jax/primitives.py:_enzyme_primal_lowering op=sort
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from sorted_quantile_loss.py: 233 -> 68 tokens in 86 s (187 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda params, noise, data: jax.numpy.mean(jax.numpy.sort(noise + params['shift'])))))({'shift': 0.0}, jax.random.PRNGKey(0), 1.0)
