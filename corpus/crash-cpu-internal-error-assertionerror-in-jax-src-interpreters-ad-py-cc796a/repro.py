# Reproducer for: JAX: internal `AssertionError` for a `custom_jvp` rule that is not linear in its tangent
# Signature: crash: platform=cpu how=internal-error detail=AssertionError in jax/_src/interpreters/ad.py:fancy_bilinear_transpose
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from straight_through.py: 195 -> 45 tokens in 53 s (213 candidates tested).
import jax
soft_round = jax.custom_jvp(lambda x: x)
soft_round.defjvp(lambda primals, tangents: (1.0, tangents[0] * tangents[0]))
jax.grad(soft_round)(1.0)
