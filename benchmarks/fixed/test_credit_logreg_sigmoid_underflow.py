"""pytest: a small logistic-regression credit-default model should train cleanly."""
import numpy as np
import jax
import jax.numpy as jnp


def load_applicants(n=400, seed=3):
    rng = np.random.default_rng(seed)
    income_k = rng.gamma(4.0, 15.0, n)            # thousands of $
    age = rng.uniform(21, 70, n)
    debt_k = rng.gamma(2.0, 10.0, n)
    n_cards = rng.poisson(3, n).astype(float)
    X = np.stack([income_k, age, debt_k, n_cards], axis=1)
    logit = -1.0 - 0.03 * (income_k - 60) + 0.08 * (debt_k - 20) + 0.2 * (n_cards - 3)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    return jnp.asarray(X, jnp.float32), jnp.asarray(y)


def init_params(key, d):
    return {"w": 0.01 * jax.random.normal(key, (d,)), "b": jnp.zeros(())}


def predict_proba(params, X):
    return jax.nn.sigmoid(X @ params["w"] + params["b"])


def bce(params, X, y):
    # work in log-space on the logits: log(sigmoid(z)) underflows to -inf for
    # large |z| (and 0 * -inf = nan), log_sigmoid does not
    z = X @ params["w"] + params["b"]
    return -jnp.mean(y * jax.nn.log_sigmoid(z) + (1 - y) * jax.nn.log_sigmoid(-z))


@jax.jit
def train_step(params, X, y, lr=0.05):
    loss, grads = jax.value_and_grad(bce)(params, X, y)
    params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    return params, loss


def test_training_loss_stays_finite():
    X, y = load_applicants()
    params = init_params(jax.random.PRNGKey(0), X.shape[1])
    for step in range(100):
        params, loss = train_step(params, X, y)
        assert jnp.isfinite(loss), f"loss is {loss} at step {step}"
    acc = jnp.mean((predict_proba(params, X) > 0.5) == (y > 0.5))
    assert acc > 0.6


if __name__ == "__main__":
    test_training_loss_stays_finite()
    print("ok")
