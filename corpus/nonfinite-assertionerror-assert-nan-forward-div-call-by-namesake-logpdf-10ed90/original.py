"""Robust linear regression with a Student-t likelihood; df=inf is the Gaussian limit used as a baseline."""
import jax
import jax.numpy as jnp
import optax
from jax.scipy.stats import t as student_t

key = jax.random.PRNGKey(0)
kx, kn = jax.random.split(key)
x = jax.random.normal(kx, (64, 3))
true_w = jnp.array([0.5, -1.0, 2.0])
y = x @ true_w + 0.1 * jax.random.normal(kn, (64,))

params = {"w": jnp.zeros(3), "b": jnp.zeros(()), "log_scale": jnp.zeros(())}
DF = jnp.inf  # Gaussian baseline; the robust run uses df=4


def nll(params, x, y):
    resid = y - (x @ params["w"] + params["b"])
    scale = jnp.exp(params["log_scale"])
    return -jnp.mean(student_t.logpdf(resid / scale, DF) - params["log_scale"])


opt = optax.adam(1e-2)
state = opt.init(params)


@jax.jit
def step(params, state):
    loss, grads = jax.value_and_grad(nll)(params, x, y)
    updates, state = opt.update(grads, state)
    return optax.apply_updates(params, updates), state, loss


for i in range(50):
    params, state, loss = step(params, state)
    assert jnp.isfinite(loss), f"step {i}: loss {loss}"
print("final loss", float(loss))
