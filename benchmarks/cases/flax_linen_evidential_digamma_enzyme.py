"""Evidential classification in Flax linen: the network outputs Dirichlet concentrations, and the loss
adds a KL term to a flat Dirichlet. The KL gradient is taken with Enzyme-JAX, and checked against
JAX's own AD before training starts."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from enzyme_ad.jax import enzyme_jax_ir
from jax.scipy.special import digamma, gammaln

NUM_CLASSES = 3
KL_WEIGHT = 0.1


class EvidentialNet(nn.Module):
    hidden: int = 16

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.hidden)(x))
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.softplus(nn.Dense(NUM_CLASSES)(x)) + 1.0


def dirichlet_kl(alpha):
    """KL(Dir(alpha) || Dir(1, ..., 1)), one value per row."""
    total = alpha.sum(-1)
    return (gammaln(total) - gammaln(float(NUM_CLASSES)) - gammaln(alpha).sum(-1)
            + ((alpha - 1.0) * (digamma(alpha) - digamma(total)[..., None])).sum(-1))


def expected_nll(alpha, labels):
    total = alpha.sum(-1)
    onehot = jax.nn.one_hot(labels, NUM_CLASSES)
    return (onehot * (digamma(total)[..., None] - digamma(alpha))).sum(-1)


def kl_term(alpha):
    return KL_WEIGHT * jnp.mean(dirichlet_kl(alpha))


enzyme_kl = enzyme_jax_ir()(kl_term)


def loss_fn(params, model, x, labels, kl):
    alpha = model.apply({"params": params}, x)
    return jnp.mean(expected_nll(alpha, labels)) + kl(alpha)


def check_gradients(alpha):
    ours = jax.jit(jax.grad(enzyme_kl))(alpha)
    reference = jax.grad(kl_term)(alpha)
    if not jnp.allclose(ours, reference, rtol=1e-3, atol=1e-5):
        print("max abs difference:", jnp.max(jnp.abs(ours - reference)))
        raise SystemExit("gradient mismatch between Enzyme-JAX and JAX")


def main():
    model = EvidentialNet()
    key = jax.random.key(0)
    x = jax.random.normal(key, (24, 5))
    labels = jnp.argmax(x[:, :NUM_CLASSES], axis=-1)
    params = model.init(key, x)["params"]
    check_gradients(model.apply({"params": params}, x))
    optimizer = optax.adam(1e-2)
    opt_state = optimizer.init(params)
    step = jax.jit(jax.value_and_grad(loss_fn), static_argnums=(1, 4))
    for i in range(3):
        loss, grads = step(params, model, x, labels, enzyme_kl)
        updates, opt_state = optimizer.update(grads, opt_state)
        params = optax.apply_updates(params, updates)
        print(i, loss)


if __name__ == "__main__":
    main()
