"""A learnable frequency-domain filter: the signal is modulated by a complex phase and the power
spectrum is matched to a target; gradients from Enzyme-JAX."""
import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


def modulate(x, phase):
    return x.astype(jnp.complex64) * jnp.exp(1j * phase)


@enzyme_jax_ir()
def loss(phase, x, target):
    z = modulate(x, phase)
    power = jnp.real(z * jnp.conj(z))
    return jnp.mean((power - target) ** 2)


def main():
    x = jnp.linspace(0.0, 1.0, 8)
    target = x ** 2
    phase = jnp.zeros(8)
    grad = jax.jit(jax.grad(loss))
    for i in range(3):
        phase = phase - 0.1 * grad(phase, x, target)
        print("step", i, phase)


if __name__ == "__main__":
    main()
