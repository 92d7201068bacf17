"""A Flax linen network learns a correction to the small-angle period of a pendulum, trained with Optax.

The exact period needs the complete elliptic integral K(m), which `jax.scipy.special` lacks, so the
per-example loss calls SciPy's `ellipk` on the host through `jax.pure_callback` (on the data only: no
gradient flows through it), and the batch loss is `jax.vmap` of the per-example loss inside the jitted
training step. JAX deprecated the old default (a sequential loop, with `vectorized=False`) and now
raises `NotImplementedError` from the callback's batching rule when `vmap_method` is left out: a JAX
API limitation that programs written against older JAX, or copied from older examples, meet. The
function traces fine on its own; the error comes from `vmap`'s rule for the `pure_callback`
primitive, so the traced (jaxpr) level can capture and reduce it.
"""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import scipy.special

GRAVITY = 9.81
HIDDEN = 32


def host_ellipk(m):
    return np.asarray(scipy.special.ellipk(np.asarray(m)), dtype=np.float32)


def exact_period(length, amplitude):
    m = jnp.sin(amplitude / 2.0) ** 2
    k = jax.pure_callback(host_ellipk, jax.ShapeDtypeStruct(m.shape, jnp.float32), m)
    return 4.0 * jnp.sqrt(length / GRAVITY) * k


class PeriodCorrection(nn.Module):
    hidden: int = HIDDEN

    @nn.compact
    def __call__(self, features):
        h = nn.tanh(nn.Dense(self.hidden)(features))
        h = nn.tanh(nn.Dense(self.hidden)(h))
        return nn.softplus(nn.Dense(1)(h))[..., 0]


model = PeriodCorrection()


def example_loss(params, example):
    length, amplitude = example[0], example[1]
    small_angle = 2.0 * jnp.pi * jnp.sqrt(length / GRAVITY)
    predicted = small_angle * model.apply(params, jnp.stack([length, amplitude]))
    target = exact_period(length, amplitude)
    return (predicted - target) ** 2 / target ** 2


def batch_loss(params, batch):
    return jnp.mean(jax.vmap(example_loss, in_axes=(None, 0))(params, batch))


optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(3e-3))


@jax.jit
def train_step(params, opt_state, batch):
    loss, grads = jax.value_and_grad(batch_loss)(params, batch)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def make_batch(key, size=64):
    k1, k2 = jax.random.split(key)
    length = jax.random.uniform(k1, (size,), minval=0.2, maxval=2.0)
    amplitude = jax.random.uniform(k2, (size,), minval=0.05, maxval=2.5)
    return jnp.stack([length, amplitude], axis=-1)


def main():
    key = jax.random.key(0)
    params = model.init(key, jnp.zeros(2))
    opt_state = optimizer.init(params)
    for step in range(20):
        key, sub = jax.random.split(key)
        params, opt_state, loss = train_step(params, opt_state, make_batch(sub))
        if step % 5 == 0:
            print(f"step {step:3d}  relative error {float(loss):.5f}")


if __name__ == "__main__":
    main()
