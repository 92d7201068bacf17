# Reproducer for: `jit` result disagrees with op-by-op evaluation (`reduce_sum`)
# Signature: wrong-result: source=jit reference=op-by-op op=reduce_sum program-exit=jit and eager results differ
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from jit_miscompare.py: 147 -> 70 tokens in 81 s (172 candidates tested).
import jax
import jax.numpy as jnp
i = jnp.arange(32769)
assert jnp.allclose(1.0, jax.jit(jax.vmap(lambda row: jnp.sum(jnp.eye(3) @ row)))(jnp.stack((i, i, i), axis=1))), 'jit and eager results differ'
