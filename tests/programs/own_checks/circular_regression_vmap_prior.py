"""A circular regression trained with plain pytrees: per-example losses under `vmap`, a uniform prior
on the predicted angle written as a von Mises density of concentration 0, a jitted training step."""
import jax
import jax.numpy as jnp
from jax.scipy.stats import vonmises

CONCENTRATION = 0.0


def predict(params, x):
    return jnp.tanh(x @ params["w"] + params["b"]) * jnp.pi


def example_loss(params, x, angle):
    mean = predict(params, x)
    fit = -vonmises.logpdf(angle - mean, kappa=2.0)
    prior = -vonmises.logpdf(mean, CONCENTRATION)
    return fit + 0.1 * prior


@jax.jit
def train_step(params, xs, angles):
    loss, grads = jax.value_and_grad(lambda p: jax.vmap(example_loss, (None, 0, 0))(p, xs, angles).mean())(params)
    return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads), loss


params = {"w": jnp.full((2,), 0.3), "b": jnp.zeros(())}
xs = jnp.array([[0.5, -1.0], [1.5, 0.2], [-0.3, 0.8]])
angles = jnp.array([0.4, 1.2, -0.5])
for step in range(5):
    params, loss = train_step(params, xs, angles)
    assert jnp.isfinite(loss), f"step {step}: loss {loss}"
