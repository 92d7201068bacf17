"""Train a linear dynamical system to be stable: penalise the spectral abscissa, read from the
diagonal of the Schur form of the state matrix."""
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

jax.config.update("jax_enable_x64", True)


def spectral_abscissa(a):
    t, _ = jsl.schur(a)
    return jnp.max(jnp.diag(t))


def simulate(a, x0, steps=5):
    xs = [x0]
    for _ in range(steps):
        xs.append(a @ xs[-1])
    return jnp.stack(xs)


def loss(a, x0, target):
    fit = jnp.mean((simulate(a, x0) - target) ** 2)
    return fit + 0.1 * jax.nn.relu(spectral_abscissa(a))


def main():
    a = jnp.array([[0.9, 0.2, 0.0], [-0.1, 1.05, 0.1], [0.0, 0.3, 0.7]])
    x0 = jnp.ones(3)
    target = simulate(0.8 * jnp.eye(3), x0)
    for i in range(3):
        a = a - 0.05 * jax.grad(loss)(a, x0, target)
        print("step", i, spectral_abscissa(a))


if __name__ == "__main__":
    main()
