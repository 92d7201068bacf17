"""A Flax NNX policy over a variable number of actions (invalid ones masked with -inf before the
softmax), trained with an `nnx.Optimizer` (Optax `adam`) on a policy-gradient loss with an entropy
bonus. The entropy guards p * log(p) with `jnp.where(p > 0, …, 0)`, but the masked actions have
p == 0 exactly, where the derivative of log is inf: the `where` multiplies it by 0. The test-style
check asserts the gradient norm is finite."""
import flax.nnx as nnx
import jax
import jax.numpy as jnp
import optax


class Policy(nnx.Module):
    def __init__(self, features, actions, rngs):
        self.hidden = nnx.Linear(features, 16, rngs=rngs)
        self.logits = nnx.Linear(16, actions, rngs=rngs)

    def __call__(self, x, valid):
        logits = self.logits(jax.nn.relu(self.hidden(x)))
        return jax.nn.softmax(jnp.where(valid, logits, -jnp.inf), axis=-1)


def entropy(p):
    return -jnp.sum(jnp.where(p > 0, p * jnp.log(p), 0.0), axis=-1)


def loss_fn(policy, obs, valid, actions, advantages, beta=0.01):
    p = policy(obs, valid)
    chosen = jnp.take_along_axis(p, actions[:, None], axis=-1)[:, 0]
    return -jnp.mean(jnp.log(chosen) * advantages) - beta * jnp.mean(entropy(p))


@nnx.jit
def train_step(policy, optimizer, obs, valid, actions, advantages):
    loss, grads = nnx.value_and_grad(loss_fn)(policy, obs, valid, actions, advantages)
    optimizer.update(policy, grads)
    return loss, grads


def test_policy_gradient_is_finite():
    policy = Policy(4, 5, nnx.Rngs(0))
    optimizer = nnx.Optimizer(policy, optax.adam(3e-4), wrt=nnx.Param)
    obs = jax.random.normal(jax.random.PRNGKey(1), (6, 4))
    valid = jnp.arange(5)[None, :] < jnp.array([5, 3, 4, 2, 5, 3])[:, None]
    actions = jnp.array([4, 0, 2, 1, 3, 2])
    advantages = jnp.array([0.5, -1.0, 0.3, 1.2, -0.4, 0.8])
    loss, grads = train_step(policy, optimizer, obs, valid, actions, advantages)
    norm = optax.global_norm(grads)
    assert jnp.isfinite(norm), f"gradient norm is {norm}"


if __name__ == "__main__":
    test_policy_gradient_is_finite()
