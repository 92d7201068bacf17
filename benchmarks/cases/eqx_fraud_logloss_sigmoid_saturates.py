"""Card-fraud classifier in Equinox; the eval log-loss is checked against the
float64 NumPy implementation used by the old reporting pipeline."""
import numpy as np
import jax
import jax.numpy as jnp
import equinox as eqx
import optax

FEATURES = ["amount_z", "foreign_ip", "new_device", "night", "velocity_1h", "merchant_risk"]


def make_transactions(n, seed):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.2).astype(np.float64)
    x = rng.normal(0.0, 1.0, size=(n, len(FEATURES)))
    x[:, 0] += 3.0 * y                                  # fraud: big amounts
    x[:, 4] += 2.5 * y                                  # ... and bursts of transactions
    x[:, 1] = (rng.random(n) < 0.1 + 0.7 * y).astype(np.float64)
    return x, y


def reference_log_loss(y, logits):
    """float64 log-loss from the legacy NumPy pipeline."""
    z = np.asarray(logits, dtype=np.float64)
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def log_loss(y, logits):
    p = jax.nn.sigmoid(logits)
    return -jnp.mean(y * jnp.log(p) + (1.0 - y) * jnp.log(1.0 - p))


def main():
    x_tr, y_tr = make_transactions(2048, seed=0)
    x_te, y_te = make_transactions(512, seed=1)
    x_tr, y_tr, x_te = jnp.asarray(x_tr), jnp.asarray(y_tr), jnp.asarray(x_te)

    model = eqx.nn.MLP(len(FEATURES), "scalar", width_size=64, depth=2, key=jax.random.PRNGKey(7))
    optim = optax.adamw(3e-3, weight_decay=1e-4)
    opt_state = optim.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def step(model, opt_state, xb, yb):
        def loss_fn(m):
            logits = jax.vmap(m)(xb)
            return optax.sigmoid_binary_cross_entropy(logits, yb).mean()
        loss, grads = eqx.filter_value_and_grad(loss_fn)(model)
        updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), opt_state, loss

    for it in range(300):
        model, opt_state, loss = step(model, opt_state, x_tr, y_tr)
        if it % 100 == 0:
            print(f"iter {it:3d}  bce {float(loss):.5f}")

    logits = jax.vmap(model)(x_te)
    print("max |logit| on test set:", float(jnp.max(jnp.abs(logits))))
    ll = log_loss(jnp.asarray(y_te), logits)
    np.testing.assert_allclose(float(ll), reference_log_loss(y_te, logits), rtol=1e-4)
    print(f"test log-loss {float(ll):.5f}")


if __name__ == "__main__":
    main()
