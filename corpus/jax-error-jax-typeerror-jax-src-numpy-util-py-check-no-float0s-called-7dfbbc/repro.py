# Reproducer for: jax.grad of jax.scipy.stats.gumbel_r.logpdf in its scale raises TypeError: xlogy(-1, scale)'s JVP rule multiplies the float0 tangent of the integer -1
# Signature: jax-error: library=jax type=TypeError raised-in=jax/_src/numpy/util.py:check_no_float0s message=Called multiply with a floatN array. floatNs do not support any operations by design because they are not compatible with non-trivial vector spaces. No implicit dtype conversion is done. You can use n entered=jax/_src/scipy/stats/gumbel_r.py:logpdf
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Reduced by reducer from flood_gumbel_exceedance.py: 296 -> 72 tokens in 14 s (182 candidates tested).
import equinox
import jax

class GumbelFit(equinox.Module):
    loc: 1.0
    log_scale: 1.0

    def __init__(self):
        self.loc = 1.0
        self.log_scale = jax.numpy.log(1.0)
equinox.filter_value_and_grad(lambda m: jax.scipy.stats.gumbel_r.logpdf(1.0, 1.0, m.log_scale))(GumbelFit())
