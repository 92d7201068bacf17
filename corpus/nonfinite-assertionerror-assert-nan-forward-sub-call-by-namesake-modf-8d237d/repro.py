# Reproducer for: jnp.modf(±inf) has a NaN fractional part; numpy.modf, which it implements, gives ±0.0
# Signature: nonfinite: type=AssertionError check=assert value=nan in=forward op=stage fix=none from=modf
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from modf_inf.py: 115 -> 44 tokens in 47 s (149 candidates tested).
import numpy
import jax.numpy as jnp
frac, whole = jnp.modf(jnp.asarray(numpy.inf))
assert numpy.array_equal(frac, numpy.modf(1.0)[0]), f'jnp.modf fractional part for +-inf is {1.0}{0}'
