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
    """CDF of the standard Student-t, via the regularized incomplete beta function.

    (jsp.hyp2f1 returns inf/garbage for z < -1, i.e. |t| > sqrt(df).)
    """
    small = jnp.abs(t) < 1e-2                 # betainc's x-gradient is singular at x = 1
    t_safe = jnp.where(small, 1.0, t)
    tail = 0.5 * jsp.betainc(df / 2.0, 0.5, df / (df + t_safe * t_safe))   # P(T > |t|)
    cdf = jnp.where(t_safe > 0, 1.0 - tail, tail)
    cdf_small = 0.5 + t * jnp.exp(jst.t.logpdf(0.0, df))   # Taylor expansion around 0
    return jnp.where(small, cdf_small, cdf)


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
    ll_cens = jnp.log(student_t_cdf(-z, NU))   # P(Y >= LIMIT) = CDF(-z) by symmetry
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
