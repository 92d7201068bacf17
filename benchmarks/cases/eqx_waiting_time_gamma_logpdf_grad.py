"""Gamma GLM for customer inter-arrival times, written with Equinox + Optax.

Each store has a few covariates (staffing, weekday, promo, ...); the model
predicts the scale of a Gamma waiting-time distribution with a fixed shape
hyperparameter. Times are logged in whole minutes.
"""
import jax
import jax.numpy as jnp
import jax.scipy.stats as jst
import equinox as eqx
import optax

SHAPE = 1.0        # Gamma shape k (k = 1 is the exponential baseline; we also tried 2.0)
N, D = 512, 6
STEPS = 100


class ScaleNet(eqx.Module):
    layers: list

    def __init__(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.layers = [
            eqx.nn.Linear(D, 32, key=k1),
            eqx.nn.Linear(32, 32, key=k2),
            eqx.nn.Linear(32, 1, key=k3),
        ]

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = jax.nn.gelu(layer(x))
        log_scale = self.layers[-1](x)[0]
        return jnp.exp(jnp.clip(log_scale, -6.0, 6.0))


def make_data(key):
    kx, kw, ky = jax.random.split(key, 3)
    x = jax.random.normal(kx, (N, D))
    w = 0.4 * jax.random.normal(kw, (D,))
    true_scale = jnp.exp(1.0 + x @ w)
    t = jax.random.gamma(ky, SHAPE, (N,)) * true_scale
    minutes = jnp.floor(t)          # logged with one-minute resolution
    return x, minutes


def loss_fn(model, x, y):
    scale = jax.vmap(model)(x)
    logp = jst.gamma.logpdf(y, SHAPE, scale=scale)
    return -jnp.mean(logp)


optim = optax.chain(optax.clip_by_global_norm(10.0), optax.adamw(1e-2, weight_decay=1e-4))


@eqx.filter_jit
def train_step(model, opt_state, x, y):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, y)
    gnorm = optax.global_norm(grads)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    model = eqx.apply_updates(model, updates)
    return model, opt_state, loss, gnorm


def main():
    key = jax.random.PRNGKey(42)
    kdata, kmodel = jax.random.split(key)
    x, y = make_data(kdata)
    print(f"{int((y == 0).sum())} of {N} waits were under a minute")

    model = ScaleNet(kmodel)
    opt_state = optim.init(eqx.filter(model, eqx.is_array))

    for step in range(STEPS):
        model, opt_state, loss, gnorm = train_step(model, opt_state, x, y)
        assert jnp.isfinite(loss), f"step {step}: loss is {loss}"
        assert jnp.isfinite(gnorm), f"step {step}: gradient norm is {gnorm}"
        if step % 20 == 0:
            print(f"step {step:3d}  nll {float(loss):.4f}  |g| {float(gnorm):.3f}")

    print("mean predicted scale:", float(jax.vmap(model)(x).mean()))


if __name__ == "__main__":
    main()
