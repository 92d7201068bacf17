# Reproducer for: JAX: no jvp rule for `zeta`
# Signature: adjoint-missing: source=jax op=zeta rule=jvp
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from finding.py: 169 -> 23 tokens in 8 s (70 candidates tested).
import jax
jax.grad(lambda x: jax.lax.zeta(x, 2.0))(1.0)
