"""A reduced kinetic model in Equinox: a distribution function over (species, field, x, v-parallel,
mu, theta, zeta) is projected onto learned velocity-space weights to get its moments, and the weights
are fitted with Optax so that the moments match measured profiles."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax

SPECIES, FIELDS, RADIAL, VPAR, MU, THETA, ZETA = 3, 1, 2, 2, 8, 8, 8
SHAPE = (SPECIES, FIELDS, RADIAL, VPAR, MU, THETA, ZETA)
VPAR_AXIS = 3


class MomentProjector(eqx.Module):
    log_weights: jax.Array
    bias: jax.Array
    species_scale: jax.Array = eqx.field(static=False)

    def __init__(self, key):
        wkey, bkey = jax.random.split(key)
        self.log_weights = 0.1 * jax.random.normal(wkey, SHAPE)
        self.bias = 0.01 * jax.random.normal(bkey, (SPECIES, FIELDS, RADIAL, MU, THETA, ZETA))
        self.species_scale = jnp.ones((SPECIES,))

    def moments(self, distribution):
        weights = jnp.exp(self.log_weights)
        density = jnp.sum(distribution * weights, axis=VPAR_AXIS) + self.bias
        return density * self.species_scale[:, None, None, None, None, None]

    def __call__(self, distribution):
        density = self.moments(distribution)
        return density.mean(axis=(-1, -2))


def maxwellian(key, temperature):
    v = jnp.linspace(-3.0, 3.0, VPAR)
    base = jnp.exp(-(v ** 2) / (2.0 * temperature))
    noise = 0.05 * jax.random.normal(key, SHAPE)
    shape = [1] * len(SHAPE)
    shape[VPAR_AXIS] = VPAR
    return base.reshape(shape) * (1.0 + noise)


@eqx.filter_value_and_grad
def profile_loss(model, distribution, target):
    predicted = model(distribution)
    return jnp.mean((predicted - target) ** 2)


@eqx.filter_jit
def fit_step(model, opt_state, distribution, target):
    loss, grads = profile_loss(model, distribution, target)
    updates, opt_state = optimizer.update(grads, opt_state, model)
    return eqx.apply_updates(model, updates), opt_state, loss


optimizer = optax.adabelief(1e-2)


def main():
    key = jax.random.key(2024)
    model_key, data_key = jax.random.split(key)
    model = MomentProjector(model_key)
    distribution = maxwellian(data_key, temperature=1.5)
    target = jnp.ones((SPECIES, FIELDS, RADIAL, MU))
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))
    history = []
    for step in range(5):
        model, opt_state, loss = fit_step(model, opt_state, distribution, target)
        history.append(loss)
    print("losses:", jnp.stack(history))


if __name__ == "__main__":
    main()
