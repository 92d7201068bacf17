import jax
import jax.numpy as jnp
from enzyme_ad.jax import enzyme_jax_ir


@enzyme_jax_ir()
def field_energy(z):
    w = z * jnp.conj(z) + 0.5 * z
    return jnp.exp(w) * z


def loss(z):
    return jnp.real(jnp.sum(field_energy(z)))


z = jnp.arange(8, dtype=jnp.complex64) * (1 + 0.5j)
print(jax.jit(jax.grad(loss))(z))
