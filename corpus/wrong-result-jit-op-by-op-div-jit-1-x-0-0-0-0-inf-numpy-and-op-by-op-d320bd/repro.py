# Reproducer for: XLA: under `jit`, `x + 0.0` is folded to `x`, so `1 / (-0.0 + 0.0)` is -inf (op by op and IEEE: +inf)
# Signature: wrong-result: source=jit reference=op-by-op op=div program-exit=jit(1/(x+0.0))(-0.0) = -inf, numpy and op-by-op give inf
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from add_zero_negzero.py: 102 -> 54 tokens in 101 s (120 candidates tested).
import jax
f = lambda a: 1.0 / (a + 0.0)
a = jax.numpy.float32(-0.0)
if not jax.numpy.allclose(jax.jit(f)(a), f(a)):
    raise SystemExit('jit(1/(x+0.0))(-0.0) = -inf, numpy and op-by-op give inf')
