"""A small Equinox classifier trained with Optax; before each update the training step halves the
gradients until their norm is below a bound (a hand-written adaptive clipping), inside the
`eqx.filter_jit` step."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax

IN, HIDDEN, CLASSES = 4, 32, 3
MAX_GRAD_NORM = 0.5
LEARNING_RATE = 3e-3


class Classifier(eqx.Module):
    layers: list
    dropout: eqx.nn.Dropout

    def __init__(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.layers = [eqx.nn.Linear(IN, HIDDEN, key=k1), eqx.nn.Linear(HIDDEN, HIDDEN, key=k2),
                       eqx.nn.Linear(HIDDEN, CLASSES, key=k3)]
        self.dropout = eqx.nn.Dropout(0.1, inference=True)

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = self.dropout(jax.nn.gelu(layer(x)))
        return self.layers[-1](x)


def cross_entropy(model, x, y):
    logits = jax.vmap(model)(x)
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, y))


def halve_until_bounded(grads):
    norm = optax.global_norm(grads)
    while norm > MAX_GRAD_NORM:
        grads = jax.tree_util.tree_map(lambda g: g / 2, grads)
        norm = norm / 2
    return grads


@eqx.filter_jit
def train_step(model, opt_state, x, y):
    loss, grads = eqx.filter_value_and_grad(cross_entropy)(model, x, y)
    grads = halve_until_bounded(grads)
    updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss


optimizer = optax.adamw(LEARNING_RATE, weight_decay=1e-4)


def make_data(key, n=256):
    kx, kw = jax.random.split(key)
    x = jax.random.normal(kx, (n, IN))
    y = jnp.argmax(x @ jax.random.normal(kw, (IN, CLASSES)), axis=-1)
    return x, y


def main():
    model = Classifier(jax.random.key(0))
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))
    x, y = make_data(jax.random.key(1))
    for epoch in range(3):
        for start in range(0, len(x), 64):
            model, opt_state, loss = train_step(model, opt_state, x[start:start + 64], y[start:start + 64])
        print(f"epoch {epoch} loss {float(loss):.4f}")


if __name__ == "__main__":
    main()
