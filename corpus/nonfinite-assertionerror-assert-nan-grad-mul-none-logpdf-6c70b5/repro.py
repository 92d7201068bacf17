# Reproducer for: The gradient of jax.scipy.stats.gamma.logpdf(0.0, 1.0, scale=s) in s is NaN (xlogy(0, 0)'s derivative) where it is -1/s
# Signature: nonfinite: type=AssertionError check=assert value=nan in=grad op=mul fix=none from=logpdf
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1300-x86_64-with-glibc2.36
# Environment: TF_CPP_MIN_LOG_LEVEL=1
# Reduced by reducer from eqx_waiting_time_gamma_logpdf_grad.py: 582 -> 245 tokens in 415 s (322 candidates tested).
import equinox
import jax
import optax

class ScaleNet(equinox.Module):
    layers: list

    def __init__(self, key):
        self.layers = [equinox.nn.Linear(1, 32, key=jax.random.split(key, 3)[0])]
    __call__ = lambda self, x: self.layers[0](x)[0]

def train_step(model, opt_state, x, y):
    loss, grads = equinox.filter_value_and_grad(lambda model, x, y: jax.numpy.mean(jax.scipy.stats.gamma.logpdf(y, 1.0, scale=model(x[0]))))(model, x, y)
    return (model, opt_state, loss, optax.global_norm(grads))
kdata, kmodel = jax.random.split(jax.random.PRNGKey(42))
kx, kw, ky = jax.random.split(kdata, 3)
assert jax.numpy.isfinite(train_step(ScaleNet(kmodel), 1.0, jax.random.normal(kx, (512, 1)), jax.numpy.floor(jax.random.gamma(ky, 1.0)))[3])
