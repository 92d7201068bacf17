# Reproducer for: JAX: no jvp rule for `pure_callback`
# Signature: adjoint-missing: source=jax op=pure_callback rule=jvp
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from host_simulator_jvp.py: 248 -> 38 tokens in 18 s (207 candidates tested).
import jax

def main():
    jax.jvp(lambda params: jax.pure_callback(None, None, params), (1.0,), (1.0,))
main()
