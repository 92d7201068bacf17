"""Censored (Tobit-style) regression with Student-t noise, trained with Flax + Optax.

Sensor readings saturate at an upper detection limit; for saturated readings we
only know y >= LIMIT, so their likelihood term is the Student-t survival function.
"""
import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import jax.scipy.stats as jst
import flax.linen as nn
import optax

NU = 3.0          # degrees of freedom of the noise model
LIMIT = 2.5       # detector saturates here
N, D = 256, 4


def student_t_cdf(t, df):
    """CDF of the standard Student-t, via the Gauss hypergeometric representation."""
    coef = jnp.exp(jsp.gammaln((df + 1.0) / 2.0) - jsp.gammaln(df / 2.0)) / jnp.sqrt(jnp.pi * df)
    return 0.5 + t * coef * jsp.hyp2f1(0.5, (df + 1.0) / 2.0, 1.5, -t * t / df)


class HeteroscedasticMLP(nn.Module):
    hidden: int = 32

    @nn.compact
    def __call__(self, x):
        h = nn.tanh(nn.Dense(self.hidden)(x))
        h = nn.tanh(nn.Dense(self.hidden)(h))
        out = nn.Dense(2)(h)
        loc = out[..., 0]
        scale = nn.softplus(out[..., 1]) + 1e-3
        return loc, scale


def make_data(key):
    kx, kw, kn = jax.random.split(key, 3)
    x = jax.random.normal(kx, (N, D))
    w = jax.random.normal(kw, (D,)) * 1.2
    y_latent = x @ w + 0.5 + 0.7 * jax.random.t(kn, NU, (N,))
    censored = y_latent >= LIMIT
    y = jnp.where(censored, LIMIT, y_latent)
    return x, y, censored


model = HeteroscedasticMLP()


def neg_log_lik(params, x, y, censored):
    loc, scale = model.apply(params, x)
    z = (y - loc) / scale
    ll_obs = jst.t.logpdf(z, NU) - jnp.log(scale)
    ll_cens = jnp.log(1.0 - student_t_cdf(z, NU))   # P(Y >= LIMIT)
    ll = jnp.where(censored, ll_cens, ll_obs)
    return -jnp.mean(ll)


optimizer = optax.adam(3e-3)


@jax.jit
def train_step(params, opt_state, x, y, censored):
    loss, grads = jax.value_and_grad(neg_log_lik)(params, x, y, censored)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss


def main():
    key = jax.random.PRNGKey(0)
    kdata, kinit = jax.random.split(key)
    x, y, censored = make_data(kdata)
    print(f"{int(censored.sum())} / {N} readings are saturated")

    params = model.init(kinit, x[:1])
    opt_state = optimizer.init(params)

    for step in range(200):
        params, opt_state, loss = train_step(params, opt_state, x, y, censored)
        assert jnp.isfinite(loss), f"non-finite loss at step {step}: {loss}"
        if step % 25 == 0:
            print(f"step {step:4d}  nll {float(loss):.4f}")

    loc, scale = model.apply(params, x)
    print("mean predicted scale:", float(scale.mean()))


if __name__ == "__main__":
    main()
