# Reproducer for: JAX: no jvp rule for `householder_product`
# Signature: adjoint-missing: source=jax op=householder_product rule=jvp
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from finding.py: 191 -> 25 tokens in 10 s (81 candidates tested).
import jax
jax.grad(lambda x: jax.lax.linalg.householder_product(x, 0.5))(1.0)
