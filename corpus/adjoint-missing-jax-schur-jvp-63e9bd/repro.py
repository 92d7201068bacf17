# Reproducer for: JAX: no jvp rule for `schur`
# Signature: adjoint-missing: source=jax op=schur rule=jvp
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from schur_stability.py: 251 -> 60 tokens in 60 s (278 candidates tested).
import jax

def spectral_abscissa(a):
    jax.scipy.linalg.schur(a)
a = jax.grad(spectral_abscissa)(jax.numpy.array([[0.9, 0.2, 0.0], [0.1, 0.0, 0.1], [0.0, 0.3, 0.7]]))
