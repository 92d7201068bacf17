import jax.numpy as jnp

n = int(input("size? "))
print(jnp.ones(n))
