# Reproducer for: JAX: no jvp rule for `betainc` in `a` and `b`
# Signature: adjoint-missing: source=jax op=betainc rule=jvp
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from beta_calibration.py: 197 -> 76 tokens in 57 s (177 candidates tested).
import jax

def calibrate(params, scores):
    a, b = params
    return jax.scipy.special.betainc(a, b, scores)

def log_loss(params, scores, labels):
    calibrate(params, scores)

def main():
    params = jax.grad(log_loss)(jax.numpy.zeros(2), 1.0, jax)
main()
