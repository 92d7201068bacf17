"""Gamma accelerated-failure-time model for right-censored survival data (Flax NNX + Optax).

Follow-up ends at day 365; patients still alive then are censored and contribute
log S(t) = gamma.logsf(t, a, scale) to the likelihood instead of log f(t).
"""
import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax.scipy.stats import gamma

FOLLOW_UP_DAYS = 365.0


class GammaAFT(nnx.Module):
    def __init__(self, n_features, hidden, rngs):
        self.fc1 = nnx.Linear(n_features, hidden, rngs=rngs)
        self.fc2 = nnx.Linear(hidden, 1, rngs=rngs)
        self.log_shape = nnx.Param(jnp.zeros(()))

    def __call__(self, x):
        h = nnx.gelu(self.fc1(x))
        scale = jnp.exp(self.fc2(h).squeeze(-1))
        return jnp.exp(self.log_shape[...]), scale


@jax.jit
def make_cohort(key, n=800, d=10):
    kx, kw, kt = jax.random.split(key, 3)
    x = jax.random.normal(kx, (n, d))
    w = 0.25 * jax.random.normal(kw, (d,))
    t_true = 90.0 * jnp.exp(x @ w) * jax.random.gamma(kt, 1.5, (n,))
    event = t_true < FOLLOW_UP_DAYS
    return x, jnp.minimum(t_true, FOLLOW_UP_DAYS), event


def neg_log_likelihood(model, x, t, event):
    a, scale = model(x)
    ll = jnp.where(event,
                   gamma.logpdf(t, a, scale=scale),
                   gamma.logsf(t, a, scale=scale))
    return -jnp.mean(ll)


@nnx.jit
def train_step(model, optimizer, x, t, event):
    loss, grads = nnx.value_and_grad(neg_log_likelihood)(model, x, t, event)
    optimizer.update(model, grads)
    return loss


def main():
    x, t, event = make_cohort(jax.random.PRNGKey(42))
    print(f"{x.shape[0]} patients, {int(event.sum())} events, "
          f"{int((~event).sum())} censored at day {FOLLOW_UP_DAYS:.0f}")

    model = GammaAFT(x.shape[1], 32, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-2, weight_decay=1e-4), wrt=nnx.Param)

    for epoch in range(200):
        loss = train_step(model, optimizer, x, t, event)
        assert jnp.isfinite(loss), f"epoch {epoch}: loss {loss}"
        if epoch % 20 == 0:
            print(f"epoch {epoch:3d}  nll {float(loss):.4f}")
    print("final nll", float(loss))


if __name__ == "__main__":
    main()
