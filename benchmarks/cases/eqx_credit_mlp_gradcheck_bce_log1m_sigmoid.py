"""Credit-default classifier (Equinox MLP) and its unit tests.

The loss is a hand-written binary cross-entropy on predicted probabilities.
`test_output_layer_gradient_matches_closed_form` checks the autodiff gradient
of the output layer against the textbook float64 formula
    dL/db = mean(sigmoid(z) - y),   dL/dW = (sigmoid(z) - y) @ h / N.
Run with pytest, or directly: `python this_file.py`.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

CONFIG = {
    "seed": 0,
    "n_train": 256,
    "width": 32,
    "depth": 1,
    "lr": 1e-3,
    "steps": 50,
}

FEATURES = ["age", "income_k", "debt_pct", "n_accounts", "years_employed", "credit_score"]


# ----------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------
def make_applicants(seed, n):
    rng = np.random.default_rng(seed)
    age = rng.uniform(21, 70, n)
    income = rng.lognormal(np.log(45.0), 0.5, n)
    debt = np.clip(rng.normal(35.0, 15.0, n), 0, 100)
    accounts = rng.poisson(5, n).astype(float)
    employed = np.minimum(rng.exponential(6.0, n), age - 18)
    score = np.clip(rng.normal(680.0, 60.0, n), 300, 850)
    x = np.stack([age, income, debt, accounts, employed, score], axis=1)
    z = (-0.04 * (age - 45) - 0.03 * (income - 45) + 0.08 * (debt - 35)
         - 0.1 * (employed - 6) - 0.02 * (score - 680))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-z))).astype(np.float32)
    return x.astype(np.float32), y


# ----------------------------------------------------------------------------
# model + loss
# ----------------------------------------------------------------------------
class DefaultModel(eqx.Module):
    mlp: eqx.nn.MLP

    def __init__(self, in_dim, width, depth, key):
        self.mlp = eqx.nn.MLP(in_dim, "scalar", width, depth, activation=jax.nn.relu, key=key)

    def logits(self, x):
        return jax.vmap(self.mlp)(x)

    def predict_proba(self, x):
        return jax.nn.sigmoid(self.logits(x))


def binary_cross_entropy(p, y):
    return -jnp.mean(y * jnp.log(p) + (1.0 - y) * jnp.log(1.0 - p))


def loss_fn(model, x, y):
    return binary_cross_entropy(model.predict_proba(x), y)


@eqx.filter_jit
def train_step(model, opt_state, x, y, optim):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, y)
    updates, opt_state = optim.update(grads, opt_state)
    return eqx.apply_updates(model, updates), opt_state, loss


def fit(cfg):
    x, y = make_applicants(cfg["seed"], cfg["n_train"])
    model = DefaultModel(x.shape[1], cfg["width"], cfg["depth"], jax.random.PRNGKey(cfg["seed"]))
    optim = optax.adam(cfg["lr"])
    opt_state = optim.init(eqx.filter(model, eqx.is_array))
    for step in range(cfg["steps"]):
        model, opt_state, loss = train_step(model, opt_state, x, y, optim)
        if step % 10 == 0:
            print(f"step {step:3d}  bce {float(loss):.4f}")
    return model


# ----------------------------------------------------------------------------
# tests
# ----------------------------------------------------------------------------
def _hidden(model, x):
    """Activations feeding the output layer."""
    h = x
    for layer in model.mlp.layers[:-1]:
        h = jax.nn.relu(jax.vmap(layer)(h))
    return np.asarray(h, dtype=np.float64)


def test_predict_proba_shape_and_range():
    x, _ = make_applicants(0, 16)
    model = DefaultModel(x.shape[1], 8, 1, jax.random.PRNGKey(0))
    p = model.predict_proba(x)
    assert p.shape == (16,)
    assert bool(jnp.all((p >= 0) & (p <= 1)))


def test_output_layer_gradient_matches_closed_form():
    cfg = CONFIG
    x, y = make_applicants(cfg["seed"], 64)
    model = DefaultModel(x.shape[1], cfg["width"], cfg["depth"], jax.random.PRNGKey(cfg["seed"]))

    grads = eqx.filter_grad(loss_fn)(model, x, y)
    g_out = grads.mlp.layers[-1]

    # float64 reference
    out = model.mlp.layers[-1]
    h = _hidden(model, x)
    w = np.asarray(out.weight, dtype=np.float64)
    b = np.asarray(out.bias, dtype=np.float64)
    z = h @ w[0] + b[0]
    p = 1.0 / (1.0 + np.exp(-z))
    r = p - y.astype(np.float64)
    ref_b = np.array([r.mean()])
    ref_w = (r @ h / len(y))[None, :]
    print(f"logit range [{z.min():.1f}, {z.max():.1f}]")

    np.testing.assert_allclose(np.asarray(g_out.bias), ref_b, rtol=1e-4, atol=1e-5,
                               err_msg="output bias gradient")
    np.testing.assert_allclose(np.asarray(g_out.weight), ref_w, rtol=1e-4, atol=1e-5,
                               err_msg="output weight gradient")


if __name__ == "__main__":
    test_predict_proba_shape_and_range()
    print("test_predict_proba_shape_and_range PASSED")
    test_output_layer_gradient_matches_closed_form()
    print("test_output_layer_gradient_matches_closed_form PASSED")
    fit(CONFIG)
