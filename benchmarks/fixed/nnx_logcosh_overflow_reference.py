import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

N_FEATURES = 16
N_SAMPLES = 512
BATCH = 64
OUTLIER_FRAC = 0.05


class Regressor(nnx.Module):
    def __init__(self, din, dhidden, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(din, dhidden, rngs=rngs)
        self.fc2 = nnx.Linear(dhidden, dhidden, rngs=rngs)
        self.head = nnx.Linear(dhidden, 1, rngs=rngs)
        self.dropout = nnx.Dropout(0.1, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.fc1(x))
        h = self.dropout(h)
        h = nnx.relu(self.fc2(h))
        return self.head(h).squeeze(-1)


def log_cosh(x):
    a = jnp.abs(x)
    return a + jax.nn.softplus(-2.0 * a) - jnp.log(2.0)


def log_cosh_reference(x):
    x = np.asarray(x, dtype=np.float64)
    return np.logaddexp(x, -x) - np.log(2.0)


def make_dataset(seed):
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=(N_FEATURES,))
    x = rng.normal(size=(N_SAMPLES, N_FEATURES)).astype(np.float32)
    y = x @ w_true + 0.1 * rng.normal(size=(N_SAMPLES,))
    outliers = rng.random(N_SAMPLES) < OUTLIER_FRAC
    y[outliers] = rng.choice([-120.0, 120.0], size=outliers.sum())
    return jnp.asarray(x), jnp.asarray(y.astype(np.float32))


def loss_fn(model, x, y):
    residual = model(x) - y
    return jnp.mean(log_cosh(residual))


@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


def check_loss_against_reference(model, x, y):
    model.eval()
    residual = model(x) - y
    got = np.asarray(log_cosh(residual))
    want = log_cosh_reference(residual)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    model.train()


def main():
    x, y = make_dataset(seed=42)
    model = Regressor(N_FEATURES, 64, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-3, weight_decay=1e-4), wrt=nnx.Param)

    check_loss_against_reference(model, x[:BATCH * 2], y[:BATCH * 2])

    key = jax.random.PRNGKey(1)
    for epoch in range(10):
        key, sub = jax.random.split(key)
        perm = jax.random.permutation(sub, N_SAMPLES)
        total = 0.0
        for i in range(0, N_SAMPLES, BATCH):
            idx = perm[i:i + BATCH]
            total += float(train_step(model, optimizer, x[idx], y[idx]))
        print(f"epoch {epoch}  loss {total / (N_SAMPLES // BATCH):.4f}")

    print("done")


if __name__ == "__main__":
    main()
