"""An Equinox MLP with a spectral-norm penalty (eigenvalues of W^T W), trained with Optax;
the loss is differentiated by Enzyme-JAX."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from enzyme_ad.jax import enzyme_jax_ir

PENALTY = 1e-2


class SpectralMLP(eqx.Module):
    layers: list
    scale: jax.Array

    def __init__(self, sizes, key):
        keys = jax.random.split(key, len(sizes) - 1)
        self.layers = [eqx.nn.Linear(a, b, key=k) for a, b, k in zip(sizes[:-1], sizes[1:], keys)]
        self.scale = jnp.ones(())

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = jax.nn.tanh(layer(x))
        return self.scale * self.layers[-1](x)

    def spectral_penalty(self):
        total = 0.0
        for layer in self.layers:
            gram = layer.weight.T @ layer.weight
            total = total + jnp.linalg.eigh(gram)[0][-1]
        return total


def split(model):
    return eqx.partition(model, eqx.is_inexact_array)


def make_loss(static):
    @enzyme_jax_ir()
    def loss(params, x, y):
        model = eqx.combine(params, static)
        pred = jax.vmap(model)(x)
        return jnp.mean((pred - y) ** 2) + PENALTY * model.spectral_penalty()
    return loss


@eqx.filter_jit
def train_step(model, opt_state, optimizer, x, y):
    params, static = split(model)
    loss, grads = jax.value_and_grad(make_loss(static))(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return eqx.apply_updates(model, updates), opt_state, loss


def main():
    model_key, data_key = jax.random.split(jax.random.key(42))
    model = SpectralMLP([3, 8, 8, 2], model_key)
    x = jax.random.uniform(data_key, (64, 3), minval=-1.0, maxval=1.0)
    y = jnp.stack([jnp.sin(x[:, 0]), x[:, 1] * x[:, 2]], axis=1)
    optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-2))
    opt_state = optimizer.init(eqx.filter(model, eqx.is_inexact_array))
    for step in range(4):
        model, opt_state, loss = train_step(model, opt_state, optimizer, x, y)
        print(f"step {step}: {loss:.5f}")


if __name__ == "__main__":
    main()
