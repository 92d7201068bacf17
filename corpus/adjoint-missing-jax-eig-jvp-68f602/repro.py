# Reproducer for: JAX: derivatives of non-symmetric `eig` eigenvectors are refused (`jnp.linalg.eig`)
# Signature: adjoint-missing: source=jax op=eig rule=jvp
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from dominant_mode.py: 193 -> 35 tokens in 24 s (165 candidates tested).
import jax

def dominant_mode(m):
    jax.numpy.linalg.eig(m)

def main():
    jax.grad(dominant_mode)(1.0)
main()
