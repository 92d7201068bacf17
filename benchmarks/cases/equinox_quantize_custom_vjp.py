"""A quantisation-aware Equinox classifier: weights are rounded to a fixed grid in the forward pass and
the straight-through estimator passes gradients back; trained with Optax through eqx.filter_value_and_grad."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax

BITS = 4


@jax.custom_vjp
def fake_quantize(w, scale):
    levels = 2 ** (BITS - 1) - 1
    return jnp.round(w / scale * levels) * scale / levels


def fake_quantize_fwd(w, scale):
    return fake_quantize(w, scale), (w, scale)


def fake_quantize_bwd(residuals, g):
    w, scale = residuals
    inside = jnp.abs(w) <= scale
    return (jnp.where(inside, g, 0.0),)


fake_quantize.defvjp(fake_quantize_fwd, fake_quantize_bwd)


class QuantLinear(eqx.Module):
    weight: jax.Array
    bias: jax.Array
    scale: jax.Array

    def __init__(self, n_in, n_out, key):
        self.weight = jax.random.normal(key, (n_out, n_in)) / jnp.sqrt(n_in)
        self.bias = jnp.zeros(n_out)
        self.scale = jnp.ones(())

    def __call__(self, x):
        return fake_quantize(self.weight, self.scale) @ x + self.bias


class Classifier(eqx.Module):
    layers: tuple

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.layers = (QuantLinear(4, 16, k1), QuantLinear(16, 3, k2))

    def __call__(self, x):
        x = jax.nn.relu(self.layers[0](x))
        return self.layers[1](x)


@eqx.filter_value_and_grad
def compute_loss(model, x, labels):
    logits = jax.vmap(model)(x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


@eqx.filter_jit
def train_step(model, opt_state, x, labels):
    loss, grads = compute_loss(model, x, labels)
    updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss


optimizer = optax.adamw(learning_rate=3e-3)

if __name__ == "__main__":
    model = Classifier(jax.random.key(7))
    x = jax.random.normal(jax.random.key(8), (32, 4))
    labels = jnp.argmax(x[:, :3], axis=1)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))
    for step in range(3):
        model, opt_state, loss = train_step(model, opt_state, x, labels)
        print(step, loss)
