"""Negative-binomial regression for bike-rental counts (Flax linen + Optax).

The NB2 likelihood is written with the Pochhammer symbol:
    log NB(y | mu, r) = log (r)_y - log y! + r log(r/(r+mu)) + y log(mu/(r+mu))
The dispersion r is learned; as r grows the model approaches a Poisson.
"""
import jax
import jax.numpy as jnp
import flax.linen as nn
import optax
from jax.scipy.special import poch, gammaln


class CountNet(nn.Module):
    hidden: int = 64

    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.Dense(self.hidden)(x))
        h = nn.relu(nn.Dense(self.hidden)(h))
        log_mu = nn.Dense(1)(h).squeeze(-1)
        log_r = self.param("log_r", nn.initializers.constant(jnp.log(10.0)), ())
        return jnp.exp(log_mu), jnp.exp(log_r)


def nb_log_likelihood(y, mu, r):
    return (jnp.log(poch(r, y)) - gammaln(y + 1.0)
            + r * jnp.log(r / (r + mu)) + y * jnp.log(mu / (r + mu)))


def make_data(key, n=1024, d=6):
    kx, kw, ky = jax.random.split(key, 3)
    x = jax.random.normal(kx, (n, d))
    w = 0.2 * jax.random.normal(kw, (d,))
    rate = jnp.exp(0.5 + x @ w)
    y = jax.random.poisson(ky, rate).astype(jnp.float32)
    return x, y


def main():
    key = jax.random.PRNGKey(0)
    k_data, k_init = jax.random.split(key)
    x, y = make_data(k_data)
    print(f"{x.shape[0]} samples, counts in [{int(y.min())}, {int(y.max())}]")

    model = CountNet()
    params = jax.jit(model.init)(k_init, x[:1])
    tx = optax.adam(3e-2)
    opt_state = tx.init(params)

    def loss_fn(params, xb, yb):
        mu, r = model.apply(params, xb)
        return -jnp.mean(nb_log_likelihood(yb, mu, r)), r

    @jax.jit
    def train_step(params, opt_state, xb, yb):
        (loss, r), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, xb, yb)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss, r

    for step in range(300):
        params, opt_state, loss, r = train_step(params, opt_state, x, y)
        if step % 10 == 0:
            print(f"step {step:3d}  nll {float(loss):.4f}  dispersion r {float(r):.2f}")
        assert jnp.isfinite(loss), f"step {step}: loss {loss} (r={float(r):.2f})"
    print("done, final nll", float(loss))


if __name__ == "__main__":
    main()
