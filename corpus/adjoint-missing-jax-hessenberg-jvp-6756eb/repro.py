# Reproducer for: JAX: no jvp rule for `hessenberg`
# Signature: adjoint-missing: source=jax op=hessenberg rule=jvp
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v657-x86_64-with-glibc2.36
# Reduced by reducer from finding.py: 186 -> 48 tokens in 10 s (142 candidates tested).
import jax
jax.grad(jax.scipy.linalg.hessenberg)(jax.numpy.asarray([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
