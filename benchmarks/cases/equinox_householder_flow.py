"""A normalising flow in Equinox whose mixing layers are orthogonal matrices built from Householder
reflections (`lax.linalg.householder_product`, as LAPACK's `orgqr` does), trained with Optax by
maximum likelihood; gradients by JAX."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax

DIM, LAYERS, STEPS = 4, 3, 20


class HouseholderMixing(eqx.Module):
    reflectors: jax.Array
    taus: jax.Array

    def __init__(self, dim, key):
        self.reflectors = jnp.tril(jax.random.normal(key, (dim, dim)), -1) + jnp.eye(dim)
        self.taus = jnp.full((dim,), 1.0)

    def matrix(self):
        return jax.lax.linalg.householder_product(self.reflectors, self.taus)

    def __call__(self, x):
        return self.matrix() @ x


class AffineCoupling(eqx.Module):
    net: eqx.nn.MLP

    def __init__(self, dim, key):
        self.net = eqx.nn.MLP(dim // 2, dim, width_size=16, depth=2, key=key)

    def __call__(self, x):
        half = x.shape[0] // 2
        shift, log_scale = jnp.split(self.net(x[:half]), 2)
        log_scale = jnp.tanh(log_scale)
        y = jnp.concatenate([x[:half], x[half:] * jnp.exp(log_scale) + shift])
        return y, jnp.sum(log_scale)


class Flow(eqx.Module):
    mixings: list
    couplings: list

    def __init__(self, dim, layers, key):
        keys = jax.random.split(key, 2 * layers)
        self.mixings = [HouseholderMixing(dim, k) for k in keys[:layers]]
        self.couplings = [AffineCoupling(dim, k) for k in keys[layers:]]

    def __call__(self, x):
        log_det = 0.0
        for mixing, coupling in zip(self.mixings, self.couplings):
            x, ld = coupling(mixing(x))
            log_det = log_det + ld
        return x, log_det


def negative_log_likelihood(flow, batch):
    z, log_det = jax.vmap(flow)(batch)
    log_prob = -0.5 * jnp.sum(z ** 2, axis=1) - 0.5 * DIM * jnp.log(2 * jnp.pi)
    return -jnp.mean(log_prob + log_det)


@eqx.filter_jit
def train_step(flow, opt_state, batch):
    loss, grads = eqx.filter_value_and_grad(negative_log_likelihood)(flow, batch)
    updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(flow, eqx.is_array))
    return eqx.apply_updates(flow, updates), opt_state, loss


optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))


def main():
    flow = Flow(DIM, LAYERS, jax.random.key(0))
    opt_state = optimizer.init(eqx.filter(flow, eqx.is_array))
    data = jax.random.normal(jax.random.key(1), (STEPS, 64, DIM)) * jnp.array([2.0, 0.5, 1.0, 1.5])
    for step, batch in enumerate(data):
        flow, opt_state, loss = train_step(flow, opt_state, batch)
        if step % 5 == 0:
            print(f"step {step}: nll {float(loss):.3f}")


if __name__ == "__main__":
    main()
