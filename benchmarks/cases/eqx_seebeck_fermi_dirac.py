"""Physics-informed fit of the Seebeck coefficient of a 2D electron gas.

An MLP maps (sheet density, temperature) to the reduced Fermi level
eta = (E_F - E_c) / kT; the Seebeck coefficient then follows from the
complete Fermi-Dirac integrals (energy-independent scattering, 2D DOS):

    S = (k_B / e) * (2 F_1(eta) / F_0(eta) - eta)

with F_0(eta) = log(1 + e^eta) and F_1(eta) = -Li2(-e^eta) = -spence(1 + e^eta).
"""
import math
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jax.scipy.special import spence

KB_OVER_E = 86.17  # uV/K
HBAR, KB, M0 = 1.0546e-34, 1.380649e-23, 9.109e-31
M_EFF = 0.067  # GaAs
DOS_2D_PER_K = M_EFF * M0 * KB / (math.pi * HBAR**2) * 1e-4  # cm^-2 K^-1


def fermi_dirac_0(eta):
    return jax.nn.softplus(eta)


def fermi_dirac_1(eta):
    # dilogarithm: Li2(z) = spence(1 - z)
    return -spence(1.0 + jnp.exp(eta))


def seebeck(eta):
    return KB_OVER_E * (2.0 * fermi_dirac_1(eta) / fermi_dirac_0(eta) - eta)


def effective_dos_2d(temp):
    """N_2D = m* k T / (pi hbar^2), in cm^-2."""
    return DOS_2D_PER_K * temp


def make_measurements(key, n=1024):
    k_n, k_t, k_noise = jax.random.split(key, 3)
    log10_density = jax.random.uniform(k_n, (n,), minval=10.0, maxval=13.0)
    temp = jax.random.uniform(k_t, (n,), minval=80.0, maxval=400.0)
    ratio = 10.0**log10_density / effective_dos_2d(temp)
    eta = jnp.log(jnp.expm1(ratio))
    s_meas = seebeck(eta) * (1.0 + 0.03 * jax.random.normal(k_noise, (n,)))
    features = jnp.stack([log10_density - 11.5, temp / 200.0 - 1.0], axis=-1)
    return features, s_meas


class FermiLevelNet(eqx.Module):
    mlp: eqx.nn.MLP
    offset: jax.Array

    def __init__(self, key):
        self.mlp = eqx.nn.MLP(2, 1, width_size=64, depth=3, activation=jax.nn.silu, key=key)
        self.offset = jnp.array(0.0)

    def __call__(self, x):
        return self.mlp(x)[0] + self.offset


def loss_fn(model, x, s_meas):
    eta = jax.vmap(model)(x)
    s_pred = seebeck(eta)
    # relative error: S spans ~10 to ~500 uV/K over the data set
    return jnp.mean(((s_pred - s_meas) / s_meas) ** 2)


optimizer = optax.adam(optax.cosine_decay_schedule(2e-3, 1000))


@eqx.filter_jit
def train_step(model, opt_state, x, y):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss


def dataloader(key, x, y, batch_size):
    while True:
        key, sub = jax.random.split(key)
        perm = jax.random.permutation(sub, x.shape[0])
        for i in range(0, x.shape[0] - batch_size + 1, batch_size):
            idx = perm[i:i + batch_size]
            yield x[idx], y[idx]


def main():
    key = jax.random.PRNGKey(0)
    k_data, k_model, k_load = jax.random.split(key, 3)
    x, s = make_measurements(k_data)
    x_tr, s_tr, x_val, s_val = x[:896], s[:896], x[896:], s[896:]
    print(f"train {x_tr.shape[0]}  val {x_val.shape[0]}  S range {float(s.min()):.1f}..{float(s.max()):.1f} uV/K")

    model = FermiLevelNet(k_model)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))
    loader = dataloader(k_load, x_tr, s_tr, batch_size=128)

    # sanity check on one batch before the long run
    xb, sb = next(loader)
    loss0, grads0 = eqx.filter_value_and_grad(loss_fn)(model, xb, sb)
    print(f"initial loss {float(loss0):.4f}")
    assert jnp.isfinite(loss0)
    assert all(jnp.isfinite(g).all() for g in jax.tree_util.tree_leaves(grads0)), "non-finite gradients"

    t0 = time.time()
    for step in range(1000):
        xb, sb = next(loader)
        model, opt_state, loss = train_step(model, opt_state, xb, sb)
        if step % 200 == 0:
            val = loss_fn(model, x_val, s_val)
            print(f"step {step:4d}  train {float(loss):.5f}  val {float(val):.5f}  ({time.time() - t0:.1f}s)")

    val = loss_fn(model, x_val, s_val)
    print(f"final val relative MSE {float(val):.5f}")
    assert val < 5e-2, f"model did not fit: {float(val)}"


if __name__ == "__main__":
    main()
