"""Annual flood peaks: fit a Gumbel law's location with Equinox (scale fixed from a regional study) and score the exceedance of a design flood."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jax.scipy.stats import gumbel_r

peaks = jnp.array([812.0, 945.0, 703.0, 1210.0, 880.0, 990.0, 760.0, 1105.0, 930.0, 860.0])


class GumbelFit(eqx.Module):
    loc: jax.Array
    scale: float = eqx.field(static=True, default=150.0)

    def __init__(self):
        self.loc = jnp.array(900.0)

    def nll(self, data):
        return -jnp.mean(gumbel_r.logpdf(data, self.loc, self.scale))

    def log_exceedance(self, level):
        return gumbel_r.logsf(level, self.loc, self.scale)


model = GumbelFit()
opt = optax.adam(0.05)
state = opt.init(eqx.filter(model, eqx.is_array))


@eqx.filter_jit
def step(model, state):
    loss, grads = eqx.filter_value_and_grad(lambda m: m.nll(peaks))(model)
    updates, state = opt.update(grads, state)
    return eqx.apply_updates(model, updates), state, loss


for _ in range(3):
    model, state, loss = step(model, state)

design_flood = 20000.0  # probable maximum flood
log_p = model.log_exceedance(design_flood)
print("log exceedance of the design flood:", log_p)
assert jnp.isfinite(log_p), "exceedance probability underflowed"
