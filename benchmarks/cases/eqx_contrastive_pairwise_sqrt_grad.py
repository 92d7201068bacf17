"""Metric learning on toy clustered data: Equinox MLP embedding + contrastive loss."""
import jax
import jax.numpy as jnp
import equinox as eqx
import optax

N_CLASSES, PER_CLASS, DIM, EMB = 5, 16, 10, 4
MARGIN = 1.0


def make_data(key):
    kc, kn = jax.random.split(key)
    centers = 3.0 * jax.random.normal(kc, (N_CLASSES, DIM))
    labels = jnp.repeat(jnp.arange(N_CLASSES), PER_CLASS)
    x = centers[labels] + 0.5 * jax.random.normal(kn, (labels.size, DIM))
    return x, labels


def pairwise_dist(z):
    diff = z[:, None, :] - z[None, :, :]
    return jnp.sqrt(jnp.sum(diff ** 2, axis=-1))


def contrastive_loss(model, x, labels):
    z = jax.vmap(model)(x)
    d = pairwise_dist(z)
    n = labels.size
    not_self = ~jnp.eye(n, dtype=bool)
    same = (labels[:, None] == labels[None, :]) & not_self
    diff = labels[:, None] != labels[None, :]
    # self-distances are zero anyway, mask them out of the averages
    d = jnp.where(not_self, d, 0.0)
    pos = jnp.sum(jnp.where(same, d ** 2, 0.0)) / jnp.sum(same)
    neg = jnp.sum(jnp.where(diff, jax.nn.relu(MARGIN - d) ** 2, 0.0)) / jnp.sum(diff)
    return pos + neg


def main():
    key = jax.random.PRNGKey(42)
    kd, km = jax.random.split(key)
    x, labels = make_data(kd)
    model = eqx.nn.MLP(DIM, EMB, width_size=32, depth=2, activation=jax.nn.tanh, key=km)

    opt = optax.adamw(1e-3, weight_decay=1e-4)
    opt_state = opt.init(eqx.filter(model, eqx.is_inexact_array))

    @eqx.filter_jit
    def train_step(model, opt_state):
        loss, grads = eqx.filter_value_and_grad(contrastive_loss)(model, x, labels)
        updates, opt_state = opt.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
        return eqx.apply_updates(model, updates), opt_state, loss

    for step in range(300):
        model, opt_state, loss = train_step(model, opt_state)
        if not jnp.isfinite(loss):
            raise FloatingPointError(f"loss became {loss} at step {step}")
        if step % 100 == 0:
            print(f"step {step:3d}  loss {float(loss):.4f}")
    print("final loss", float(loss))


if __name__ == "__main__":
    main()
