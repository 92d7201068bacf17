"""JAX 0.10.2 refuses the derivative of non-symmetric `eig` eigenvectors (the corpus case
regex-derivatives-of-non-symmetric-…)."""
import jax

def dominant_mode(m):
    jax.numpy.linalg.eig(m)

def main():
    jax.grad(dominant_mode)(1.0)
main()
