"""An Equinox MLP with a hand-written layer norm (`sqrt` of the variance, no epsilon), trained with
Optax `adamw` under `eqx.filter_jit`. The inputs are zero-padded to a fixed width, so a padded
example has zero hidden activations and so zero variance: the norm's forward pass is fine
(0 / sqrt(0) is guarded), but the derivative of `sqrt` at 0 is inf. The training loop stops when a gradient is not finite."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax


def layer_norm(x, scale, bias):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    centred = x - mean
    std = jnp.sqrt(jnp.mean(centred ** 2, axis=-1, keepdims=True))
    normed = jnp.where(std > 0, centred / jnp.where(std > 0, std, 1.0), 0.0)
    return normed * scale + bias


class Block(eqx.Module):
    linear: eqx.nn.Linear
    scale: jax.Array
    bias: jax.Array

    def __init__(self, width, key):
        self.linear = eqx.nn.Linear(width, width, use_bias=False, key=key)
        self.scale = jnp.ones(width)
        self.bias = jnp.zeros(width)

    def __call__(self, x):
        return jax.nn.gelu(layer_norm(self.linear(x), self.scale, self.bias))


class Model(eqx.Module):
    blocks: list
    head: eqx.nn.Linear

    def __init__(self, width, depth, key):
        keys = jax.random.split(key, depth + 1)
        self.blocks = [Block(width, k) for k in keys[:-1]]
        self.head = eqx.nn.Linear(width, 1, key=keys[-1])

    def __call__(self, x):
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)[0]


def pad(rows, width):
    return jnp.stack([jnp.pad(jnp.asarray(r, jnp.float32), (0, width - len(r))) for r in rows])


@eqx.filter_jit
def step(model, opt_state, x, y, optimizer):
    def loss_fn(m):
        return jnp.mean((jax.vmap(m)(x) - y) ** 2)

    loss, grads = eqx.filter_value_and_grad(loss_fn)(model)
    updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss, grads


def main():
    width = 8
    x = pad([[0.5, 1.0, -0.3], [2.0, 0.1], [], [1.5, -1.0, 0.2, 0.7]], width)
    y = jnp.array([1.0, 0.0, 0.5, -0.5])
    model = Model(width, depth=2, key=jax.random.PRNGKey(0))
    optimizer = optax.adamw(1e-3)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))
    for epoch in range(3):
        model, opt_state, loss, grads = step(model, opt_state, x, y, optimizer)
        leaves = jax.tree_util.tree_leaves(eqx.filter(grads, eqx.is_array))
        if not all(bool(jnp.all(jnp.isfinite(g))) for g in leaves):
            raise FloatingPointError(f"epoch {epoch}: NaN in gradients (loss {float(loss):.4f})")
        print(f"epoch {epoch}: loss {float(loss):.4f}")


if __name__ == "__main__":
    main()
