"""A linear regression trained with a hand-built Optax chain that ends in `optax.scale(lr)`: the
update is `+lr * grad` (`optax.sgd` scales by `-lr`), so every step climbs the loss, and the check
that the loss fell fails."""
import jax
import jax.numpy as jnp
import optax


def loss_fn(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


def main():
    x = jax.random.normal(jax.random.PRNGKey(0), (32, 3))
    y = x @ jnp.array([1.0, -2.0, 0.5])
    w = jnp.zeros(3)
    lr = 0.05
    optimizer = optax.chain(optax.clip(1.0), optax.scale(lr))
    opt_state = optimizer.init(w)
    initial_loss = loss_fn(w, x, y)
    for step in range(20):
        grads = jax.grad(loss_fn)(w, x, y)
        updates, opt_state = optimizer.update(grads, opt_state)
        w = optax.apply_updates(w, updates)
    final_loss = loss_fn(w, x, y)
    assert final_loss < initial_loss, f"loss went up: {initial_loss:.3f} -> {final_loss:.3f}"


main()
