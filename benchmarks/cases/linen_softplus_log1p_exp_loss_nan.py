"""Chargeback-risk model on raw transaction features (Flax linen + Optax).

Binary logistic regression head on a small MLP. The features come straight
from the payments table: amount in cents, account age in days, number of
items, hour of day, and whether the card was present.
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import flax.linen as nn
from flax.training import train_state


class RiskMLP(nn.Module):
    hidden: int = 64

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(self.hidden)(x)
        x = nn.gelu(x)
        x = nn.Dense(self.hidden // 2)(x)
        x = nn.gelu(x)
        return nn.Dense(1)(x)[..., 0]


def softplus(z):
    return jnp.log1p(jnp.exp(z))


def logistic_loss(logits, labels):
    # -[y*log(sigmoid(z)) + (1-y)*log(1-sigmoid(z))] = softplus(z) - y*z
    per_example = softplus(logits) - labels * logits
    return jnp.mean(per_example)


def make_transactions(n, seed=0):
    rng = np.random.default_rng(seed)
    amount_cents = rng.lognormal(mean=8.5, sigma=1.2, size=n)
    account_age_days = rng.integers(1, 3650, size=n).astype(np.float64)
    n_items = rng.poisson(3.0, size=n) + 1.0
    hour = rng.integers(0, 24, size=n).astype(np.float64)
    card_present = rng.integers(0, 2, size=n).astype(np.float64)
    x = np.stack([amount_cents, account_age_days, n_items, hour, card_present], axis=1)
    risk = 1.5 * (amount_cents > 20000) + 1.0 * (account_age_days < 60) - 1.2 * card_present
    p = 1.0 / (1.0 + np.exp(-(risk - 1.0)))
    y = (rng.uniform(size=n) < p).astype(np.float64)
    return x.astype(np.float32), y.astype(np.float32)


def create_state(rng, n_features, lr=3e-4):
    model = RiskMLP()
    params = model.init(rng, jnp.zeros((1, n_features)))["params"]
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(lr, weight_decay=1e-4))
    return train_state.TrainState.create(apply_fn=model.apply, params=params, tx=tx)


@jax.jit
def train_step(state, x, y):
    def loss_fn(params):
        logits = state.apply_fn({"params": params}, x)
        return logistic_loss(logits, y)

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), loss


def batches(x, y, batch_size, rng):
    perm = rng.permutation(len(x))
    for i in range(0, len(x) - batch_size + 1, batch_size):
        idx = perm[i:i + batch_size]
        yield jnp.asarray(x[idx]), jnp.asarray(y[idx])


def train(epochs=3, batch_size=128, seed=0):
    x, y = make_transactions(4096, seed=seed)
    state = create_state(jax.random.PRNGKey(seed), x.shape[1])
    rng = np.random.default_rng(seed)
    history = []
    for epoch in range(epochs):
        for step, (xb, yb) in enumerate(batches(x, y, batch_size, rng)):
            state, loss = train_step(state, xb, yb)
            if epoch == 0 and step == 0:
                assert jnp.isfinite(loss), f"non-finite loss at first step: {loss}"
            history.append(float(loss))
        print(f"epoch {epoch}: mean loss {np.mean(history[-(len(x) // batch_size):]):.4f}")
    return state, history


if __name__ == "__main__":
    state, history = train()
    assert history[-1] < history[0], "loss did not decrease"
    print("ok")
