"""An Equinox MLP with a choice of normalisation between its layers, trained with Optax: each
normalisation, at each width, must lower the loss within a few steps."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax
import pytest

EPS = 1e-5


def layer_norm(h):
    mu = h.mean(-1, keepdims=True)
    return (h - mu) / jnp.sqrt(h.var(-1, keepdims=True) + EPS)


def rms_norm(h):
    return h / jnp.sqrt((h ** 2).mean(-1, keepdims=True) + EPS)


def newton_rsqrt(v, tol=1e-6, max_iter=50):
    # 1 / sqrt(v) by Newton's iteration, run until it settles (no sqrt on the accelerator's slow path)
    def cond(state):
        i, y, prev = state
        return (i < max_iter) & (jnp.max(jnp.abs(y - prev)) > tol)

    def body(state):
        i, y, _ = state
        return i + 1, y * (1.5 - 0.5 * v * y * y), y

    _, y, _ = jax.lax.while_loop(cond, body, (0, 1.0 / (1.0 + v), jnp.zeros_like(v)))
    return y


def newton_norm(h):
    return h * newton_rsqrt((h ** 2).mean(-1, keepdims=True) + EPS)


NORMS = {"layer": layer_norm, "rms": rms_norm, "newton": newton_norm}


class MLP(eqx.Module):
    layers: list
    norm: callable = eqx.field(static=True)

    def __init__(self, width, norm, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.layers = [eqx.nn.Linear(4, width, key=k1), eqx.nn.Linear(width, width, key=k2),
                       eqx.nn.Linear(width, 1, key=k3)]
        self.norm = norm

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = jax.nn.gelu(self.norm(layer(x)))
        return self.layers[-1](x)


def loss_fn(model, x, y):
    pred = jax.vmap(model)(x)
    return jnp.mean((pred - y) ** 2)


@eqx.filter_jit
def train_step(model, opt_state, optimizer, x, y):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss


@pytest.mark.parametrize("norm", sorted(NORMS))
@pytest.mark.parametrize("width", [8, 16])
def test_training_lowers_loss(width, norm, key, data):
    x, y = data
    model = MLP(width, NORMS[norm], key)
    optimizer = optax.adam(1e-2)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))
    first = loss_fn(model, x, y)
    for _ in range(5):
        model, opt_state, loss = train_step(model, opt_state, optimizer, x, y)
    assert loss < first


@pytest.mark.parametrize("norm", sorted(NORMS))
def test_norm_is_scale_free(norm, key):
    h = jax.random.normal(key, (3, 8))
    assert jnp.allclose(NORMS[norm](10.0 * h), NORMS[norm](h), atol=1e-3)
