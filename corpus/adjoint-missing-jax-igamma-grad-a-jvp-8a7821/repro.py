# Reproducer for: JAX: no jvp rule for `igamma_grad_a`
# Signature: adjoint-missing: source=jax op=igamma_grad_a rule=jvp
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from gamma_shape_hessian.py: 213 -> 64 tokens in 222 s (147 candidates tested).
import jax

def laplace_std(a, times, censored_at):
    jax.grad(jax.grad(lambda a, times, censored_at: jax.scipy.special.gammainc(a, censored_at)))(a, times, censored_at)

def main():
    laplace_std(2.0, 1.0, 1.0)
main()
