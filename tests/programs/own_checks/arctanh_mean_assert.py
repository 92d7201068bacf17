"""A squashed-Gaussian policy's log-probability of replayed actions: `arctanh` of actions clipped to
exactly ±1 is ±inf, and the mean over the batch sums inf and -inf into nan; the loss's check fires."""
import jax
import jax.numpy as jnp


def log_prob(mean, action):
    pre_tanh = jnp.arctanh(jnp.clip(action, -1.0, 1.0))
    return -0.5 * jnp.sum((pre_tanh - mean) ** 2) - jnp.sum(jnp.log(1.0 - action ** 2 + 1e-6))


@jax.jit
def loss_fn(means, actions, advantages):
    logp = jax.vmap(log_prob)(means, actions)
    return -jnp.mean(logp * advantages)


actions = jnp.clip(2.0 * jax.random.normal(jax.random.PRNGKey(0), (16, 2)), -1.0, 1.0)
loss = loss_fn(jnp.zeros((16, 2)), actions, jnp.linspace(-1.0, 1.0, 16))
assert jnp.isfinite(loss), f"loss is {loss}"
