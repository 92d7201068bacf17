"""Soft actor-critic style policy update (Equinox + Optax): a tanh-squashed Gaussian policy whose
log-probability of replayed actions inverts the squashing with arctanh."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax


class Policy(eqx.Module):
    trunk: eqx.nn.MLP
    log_std: jax.Array

    def __init__(self, obs_dim, act_dim, key):
        self.trunk = eqx.nn.MLP(obs_dim, act_dim, width_size=32, depth=2, key=key)
        self.log_std = jnp.zeros(act_dim)

    def log_prob(self, obs, action):
        mean = self.trunk(obs)
        pre_tanh = jnp.arctanh(jnp.clip(action, -1.0, 1.0))
        z = (pre_tanh - mean) / jnp.exp(self.log_std)
        gauss = -0.5 * jnp.sum(z ** 2 + 2 * self.log_std + jnp.log(2 * jnp.pi))
        return gauss - jnp.sum(jnp.log(1.0 - action ** 2 + 1e-6))


def loss_fn(policy, obs, actions, advantages):
    logp = jax.vmap(policy.log_prob)(obs, actions)
    return -jnp.mean(logp * advantages)


@eqx.filter_jit
def update(policy, opt_state, optimizer, batch):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(policy, *batch)
    updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(policy, eqx.is_array))
    return eqx.apply_updates(policy, updates), opt_state, loss


def main():
    key_obs, key_act, key_model = jax.random.split(jax.random.PRNGKey(3), 3)
    obs = jax.random.normal(key_obs, (64, 8))
    # actions replayed from the environment, saturated at the action bounds by its clipping
    actions = jnp.clip(2.0 * jax.random.normal(key_act, (64, 2)), -1.0, 1.0)
    advantages = jnp.linspace(-1.0, 1.0, 64)
    policy = Policy(8, 2, key_model)
    optimizer = optax.adam(3e-4)
    opt_state = optimizer.init(eqx.filter(policy, eqx.is_array))
    for step in range(5):
        policy, opt_state, loss = update(policy, opt_state, optimizer, (obs, actions, advantages))
        assert jnp.isfinite(loss), f"step {step}: loss is {loss}"
    print("trained")


if __name__ == "__main__":
    main()
