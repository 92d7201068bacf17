"""Fit the parameters of a simulator that runs on the host in NumPy (through jax.pure_callback);
forward-mode sensitivities are requested with jax.jvp."""
import numpy as np

import jax
import jax.numpy as jnp


def host_simulate(params):
    k, c = np.asarray(params)
    t = np.linspace(0.0, 2.0, 6, dtype=np.float32)
    return (np.exp(-c * t) * np.cos(k * t)).astype(np.float32)


def simulate(params):
    return jax.pure_callback(host_simulate, jax.ShapeDtypeStruct((6,), jnp.float32), params)


def loss(params, observed):
    return jnp.mean((simulate(params) - observed) ** 2)


def main():
    observed = jnp.asarray(host_simulate(np.array([2.0, 0.5], dtype=np.float32)))
    params = jnp.array([1.5, 0.3])
    for i in range(3):
        _, slope_k = jax.jvp(lambda p: loss(p, observed), (params,), (jnp.array([1.0, 0.0]),))
        params = params - 0.1 * jnp.array([slope_k, 0.0])
        print("step", i, params)


if __name__ == "__main__":
    main()
