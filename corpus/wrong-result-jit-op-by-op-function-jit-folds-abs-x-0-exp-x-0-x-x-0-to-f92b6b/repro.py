# Reproducer for: XLA: under `jit`, `x * x >= 0` is folded to True for a NaN x (op by op: False; XLA pass `algsimp`)
# Signature: wrong-result: source=jit reference=op-by-op op=function program-exit=jit folds ['abs(x)>=0', 'exp(x)>=0', 'x*x>=0'] to True although the element is NaN
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from nonneg_compare_nan.py: 173 -> 48 tokens in 78 s (126 candidates tested).
# Runs through with: XLA_FLAGS=--xla_disable_hlo_passes=algsimp python repro.py
import jax
f = lambda a: a * a >= 0.0
a = jax.numpy.nan
if not jax.numpy.allclose(jax.jit(f)(a), f(a)):
    raise SystemExit("jit folds ['abs(x)>=0', 'exp(x)>=0', 'x*x>=0'] to True although the element is NaN")
