"""Q-learning with an Equinox Q-network and Optax `adam`, the TD loss differentiated by Enzyme-JAX.
The TD target r + gamma * max_a' Q(s', a') is wrapped in `jax.lax.stop_gradient` (semi-gradient TD),
and the Q-value of the action taken is picked by integer indexing. Before training, the program checks
Enzyme's gradient of the loss against JAX's and asserts they agree."""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from enzyme_ad.jax import enzyme_jax_ir

GAMMA = 0.9


class QNetwork(eqx.Module):
    layers: list

    def __init__(self, obs_dim, num_actions, key):
        k1, k2 = jax.random.split(key)
        self.layers = [eqx.nn.Linear(obs_dim, 32, key=k1), eqx.nn.Linear(32, num_actions, key=k2)]

    def __call__(self, obs):
        return self.layers[1](jax.nn.relu(self.layers[0](obs)))


def td_loss(params, static, obs, actions, rewards, next_obs, done):
    q_net = eqx.combine(params, static)
    q = jax.vmap(q_net)(obs)
    q_taken = q[jnp.arange(q.shape[0]), actions]
    next_q = jnp.max(jax.vmap(q_net)(next_obs), axis=-1)
    target = jax.lax.stop_gradient(rewards + GAMMA * (1.0 - done) * next_q)
    return jnp.mean((q_taken - target) ** 2)


def make_grad(static, use_enzyme):
    def loss(params, *batch):
        return td_loss(params, static, *batch)
    return jax.jit(jax.grad(enzyme_jax_ir()(loss) if use_enzyme else loss))


def fake_transitions(key, n, obs_dim, num_actions):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    obs = jax.random.normal(k1, (n, obs_dim))
    actions = jax.random.randint(k2, (n,), 0, num_actions)
    rewards = jax.random.uniform(k3, (n,))
    next_obs = obs + 0.1 * jax.random.normal(k4, (n, obs_dim))
    done = (jnp.arange(n) % 5 == 4).astype(jnp.float32)
    return obs, actions, rewards, next_obs, done


def main():
    q_net = QNetwork(4, 3, jax.random.PRNGKey(0))
    params, static = eqx.partition(q_net, eqx.is_inexact_array)
    batch = fake_transitions(jax.random.PRNGKey(1), 16, 4, 3)
    enzyme_grad, jax_grad = make_grad(static, True), make_grad(static, False)
    for ours, reference in zip(jax.tree_util.tree_leaves(enzyme_grad(params, *batch)),
                               jax.tree_util.tree_leaves(jax_grad(params, *batch))):
        np.testing.assert_allclose(ours, reference, rtol=1e-4, atol=1e-6)
    optimizer = optax.adam(1e-3)
    opt_state = optimizer.init(params)
    for step in range(3):
        updates, opt_state = optimizer.update(enzyme_grad(params, *batch), opt_state)
        params = optax.apply_updates(params, updates)
        print(f"step {step}: td loss {td_loss(params, static, *batch):.4f}")


if __name__ == "__main__":
    main()
