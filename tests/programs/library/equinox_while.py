"""Equinox: an eqx.Module with a while_loop refinement, differentiated by eqx.filter_value_and_grad
and eqx.filter_grad under eqx.filter_jit, with an Optax update."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax


class Solver(eqx.Module):
    layer: eqx.nn.Linear
    steps: int = eqx.field(static=True)

    def __call__(self, x):
        def body(carry):
            i, h = carry
            return i + 1, jnp.tanh(self.layer(h))

        return jax.lax.while_loop(lambda c: c[0] < self.steps, body, (0, x))[1]


def loss_fn(model, x):
    return jnp.sum(model(x) ** 2)


model = Solver(eqx.nn.Linear(3, 3, key=jax.random.PRNGKey(0)), steps=3)
tx = optax.adam(1e-2)
opt_state = tx.init(eqx.filter(model, eqx.is_array))


@eqx.filter_jit
def step(model, opt_state, x):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x)
    updates, opt_state = tx.update(grads, opt_state)
    return eqx.apply_updates(model, updates), opt_state, loss


model, opt_state, loss = step(model, opt_state, jnp.ones(3))
print(loss)
