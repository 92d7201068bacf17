# Reproducer for: jax.scipy.stats.vonmises.logpdf is NaN at kappa = 0, which it documents (kappa >= 0); SciPy gives the uniform density's -log(2 pi)
# Signature: nonfinite: type=AssertionError check=assert value=nan in=forward op=select_n fix=call-by-namesake from=logpdf
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from circular_prior.py: 112 -> 38 tokens in 115 s (86 candidates tested).
import jax
assert jax.numpy.isfinite(jax.value_and_grad(lambda mu: jax.scipy.stats.vonmises.logpdf(mu, 0.0))(1.0)[0])
