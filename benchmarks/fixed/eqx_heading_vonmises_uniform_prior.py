"""Predict wind heading from sensor features; a von Mises likelihood plus a uniform circular prior."""
import jax
import jax.numpy as jnp
import optax
import equinox as eqx
from jax.scipy.stats import vonmises

class Heading(eqx.Module):
    mlp: eqx.nn.MLP
    def __init__(self, key):
        self.mlp = eqx.nn.MLP(3, 2, 16, 2, key=key)
    def __call__(self, x):
        out = self.mlp(x)
        return jnp.arctan2(out[0], out[1])

PRIOR_KAPPA = 0.0   # uniform prior on the circle

def loss_fn(model, x, theta):
    mu = jax.vmap(model)(x)
    nll = -vonmises.logpdf(theta - mu, 4.0).mean()
    # kappa = 0 is the uniform distribution on the circle: its log-density is -log(2 pi) everywhere
    prior = jnp.log(2 * jnp.pi) if PRIOR_KAPPA == 0.0 else -vonmises.logpdf(mu, PRIOR_KAPPA).mean()
    return nll + 0.01 * prior

key = jax.random.PRNGKey(0)
k1, k2, k3 = jax.random.split(key, 3)
x = jax.random.normal(k1, (64, 3))
theta = jnp.arctan2(x[:, 0], x[:, 1]) + 0.1 * jax.random.normal(k2, (64,))
model = Heading(k3)
opt = optax.adam(1e-2)
state = opt.init(eqx.filter(model, eqx.is_array))

@eqx.filter_jit
def step(model, state):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, theta)
    updates, state = opt.update(grads, state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), state, loss

for i in range(20):
    model, state, loss = step(model, state)
    assert jnp.isfinite(loss), f"step {i}: loss is {loss}"
print("final loss", loss)
