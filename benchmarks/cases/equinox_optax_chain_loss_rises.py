"""An Equinox MLP regressor trained with a hand-assembled Optax chain: gradient clipping, Adam's
scaling and a warmup-cosine schedule. `optax.scale_by_schedule` multiplies by the schedule as it is,
without the minus sign that `optax.adam` / `scale_by_learning_rate` put in, so every step climbs the
loss instead of descending it. The training loop checks that the loss has fallen."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax


class MLP(eqx.Module):
    layers: list

    def __init__(self, sizes, key):
        keys = jax.random.split(key, len(sizes) - 1)
        self.layers = [eqx.nn.Linear(a, b, key=k) for a, b, k in zip(sizes[:-1], sizes[1:], keys)]

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = jax.nn.silu(layer(x))
        return self.layers[-1](x)[0]


def make_optimizer(peak_lr, steps):
    schedule = optax.warmup_cosine_decay_schedule(0.0, peak_lr, warmup_steps=5, decay_steps=steps)
    return optax.chain(
        optax.clip_by_global_norm(1.0),
        optax.scale_by_adam(b1=0.9, b2=0.99),
        optax.scale_by_schedule(schedule),
    )


@eqx.filter_jit
def train_step(model, opt_state, optimizer, x, y):
    def loss_fn(m):
        return jnp.mean((jax.vmap(m)(x) - y) ** 2)

    loss, grads = eqx.filter_value_and_grad(loss_fn)(model)
    updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss


def main():
    data_key, model_key = jax.random.split(jax.random.PRNGKey(0))
    x = jax.random.uniform(data_key, (128, 2), minval=-2.0, maxval=2.0)
    y = jnp.sin(x[:, 0]) * jnp.cos(x[:, 1])
    model = MLP([2, 32, 32, 1], model_key)
    steps = 40
    optimizer = make_optimizer(1e-2, steps)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))
    losses = []
    for step in range(steps):
        model, opt_state, loss = train_step(model, opt_state, optimizer, x, y)
        losses.append(float(loss))
        if step % 10 == 0:
            print(f"step {step}: loss {loss:.4f}")
    assert losses[-1] < losses[0], f"loss did not fall: {losses[0]:.4f} -> {losses[-1]:.4f}"


if __name__ == "__main__":
    main()
