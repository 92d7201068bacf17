# Reproducer for: jit reassociates (a / b) / c into a / (b * c) (algsimp), so b * c underflows or overflows where op by op the quotients are finite: a / a / a at a = 1e-30 is inf
# Signature: wrong-result: source=jit reference=op-by-op op=div program-exit=assert_allclose
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Reduced by reducer from div_reassociation_overflow.py: 226 -> 45 tokens in 35 s (115 candidates tested).
# Runs through with: XLA_FLAGS=--xla_disable_hlo_passes=algsimp python repro.py
import numpy
import jax
f = lambda a: a / a / a
a = jax.numpy.float32(1.0000000031710769e-30)
numpy.testing.assert_allclose(jax.jit(f)(a), f(a))
