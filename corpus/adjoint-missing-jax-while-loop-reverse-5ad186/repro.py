# Reproducer for: JAX: no reverse rule for `while_loop`
# Signature: adjoint-missing: source=jax op=while_loop rule=reverse
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from bisection_root.py: 201 -> 62 tokens in 180 s (606 candidates tested).
import jax

def main():
    w = jax.grad(lambda w, xs, ys: jax.lax.while_loop(lambda state: 0 > 0.0, lambda state: (w, 1.0), (xs, xs))[0])(0.5, 1.0, 1.0)
main()
