"""Origin: NaN in grad of log1p via jnp.where-masked log1p(-exp(-mu)) at zero-exposure padded windows
Fix: replace mu by a safe value (e.g. jnp.where(mask, mu, 1.0)) before log1p(-exp(-mu)), the double-where trick.
An Equinox MLP predicts a log event rate for sensor sites from site covariates; each site has a
variable number of observation windows, padded to a fixed length with exposure 0. For a window
of exposure t the expected count is mu = rate * t and the likelihood of "at least one event" is
1 - exp(-mu), so the Bernoulli log-likelihood uses log1p(-exp(-mu)). Padded windows are masked
with jnp.where, which keeps the loss finite, but at those windows mu == 0, exp(-mu) == 1 and the
derivative of log1p at -1 is infinite: the zero cotangent from where times inf gives NaN, which
propagates into every parameter gradient. The check after one Optax step fails.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

N_SITES, MAX_WINDOWS, N_FEAT = 64, 12, 5


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N_SITES, N_FEAT)).astype(np.float32)
    true_w = rng.normal(scale=0.5, size=N_FEAT)
    rate = np.exp(x @ true_w - 1.0)
    n_obs = rng.integers(4, MAX_WINDOWS + 1, size=N_SITES)
    exposure = rng.uniform(0.5, 3.0, size=(N_SITES, MAX_WINDOWS))
    mask = np.arange(MAX_WINDOWS)[None, :] < n_obs[:, None]
    exposure = np.where(mask, exposure, 0.0).astype(np.float32)
    p_event = 1.0 - np.exp(-rate[:, None] * exposure)
    y = (rng.uniform(size=p_event.shape) < p_event).astype(np.float32) * mask
    return jnp.asarray(x), jnp.asarray(exposure), jnp.asarray(y), jnp.asarray(mask)


class RateModel(eqx.Module):
    mlp: eqx.nn.MLP

    def __init__(self, key):
        self.mlp = eqx.nn.MLP(N_FEAT, "scalar", width_size=32, depth=2,
                              activation=jax.nn.softplus, key=key)

    def __call__(self, x):
        return jnp.exp(self.mlp(x))  # events per unit exposure


def loss_fn(model, x, exposure, y, mask):
    rate = jax.vmap(model)(x)
    mu = rate[:, None] * exposure
    # log P(any event) = log(1 - exp(-mu)); log P(no event) = -mu
    ll = jnp.where(mask, y * jnp.log1p(-jnp.exp(-mu)) - (1.0 - y) * mu, 0.0)
    return -ll.sum() / mask.sum()


@eqx.filter_jit
def train_step(model, opt_state, x, exposure, y, mask):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, exposure, y, mask)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    model = eqx.apply_updates(model, updates)
    return model, opt_state, loss, grads


key = jax.random.PRNGKey(42)
model = RateModel(key)
optim = optax.adam(3e-3)
opt_state = optim.init(eqx.filter(model, eqx.is_array))
x, exposure, y, mask = make_data()

for step in range(5):
    model, opt_state, loss, grads = train_step(model, opt_state, x, exposure, y, mask)
    print(f"step {step}: loss={float(loss):.4f}")
    leaves = jax.tree_util.tree_leaves(eqx.filter(grads, eqx.is_array))
    assert all(jnp.isfinite(g).all() for g in leaves), f"non-finite gradients at step {step}"
print("done")
