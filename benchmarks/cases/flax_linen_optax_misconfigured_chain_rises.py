"""Origin: mismatch (the loss rises; an order check) in forward of mul via optax.scale_by_learning_rate (negated rate)
Fix: pass the positive schedule, optax.scale_by_learning_rate(schedule): it already flips the sign.

A Flax linen regression MLP in a `flax.training.train_state.TrainState`, with a hand-built Optax
chain (gradient clipping, Adam scaling, weight decay, cosine-decayed learning rate). The last link
was ported from a chain that ended in `optax.scale(-lr)`: the author kept the minus sign and wrote
`optax.scale_by_learning_rate(lambda step: -schedule(step))`, but `scale_by_learning_rate` already
negates (`flip_sign=True`), so the two minus signs cancel and every step climbs the loss. The
script checks that the loss fell over the run.
"""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training import train_state


class Regressor(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.tanh(nn.Dense(32)(x))
        x = nn.tanh(nn.Dense(32)(x))
        return nn.Dense(1)(x)[:, 0]


def make_optimizer(peak_lr, total_steps):
    schedule = optax.cosine_decay_schedule(peak_lr, decay_steps=total_steps, alpha=0.1)
    return optax.chain(
        optax.clip_by_global_norm(1.0),
        optax.scale_by_adam(b1=0.9, b2=0.999),
        optax.add_decayed_weights(1e-4),
        optax.scale_by_learning_rate(lambda step: -schedule(step)),  # descend
    )


@jax.jit
def train_step(state, x, y):
    def loss_fn(params):
        pred = state.apply_fn({"params": params}, x)
        return jnp.mean((pred - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), loss


def make_data(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] + 0.1 * rng.standard_normal(n)
    return jnp.asarray(x), jnp.asarray(y, jnp.float32)


def main(steps=200):
    x, y = make_data(256)
    model = Regressor()
    params = model.init(jax.random.PRNGKey(0), x[:1])["params"]
    state = train_state.TrainState.create(
        apply_fn=model.apply, params=params, tx=make_optimizer(3e-3, steps))
    losses = []
    for step in range(steps):
        state, loss = train_step(state, x, y)
        losses.append(float(loss))
        if step % 50 == 0:
            print(f"step {step:3d}  mse {loss:.4f}")
    assert losses[-1] < losses[0], f"training made things worse: mse {losses[0]:.4f} -> {losses[-1]:.4f}"
    print(f"final mse {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
