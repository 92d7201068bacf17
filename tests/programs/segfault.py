"""Dies by SIGSEGV after importing jax: a real crash of the process, reading address 0."""
import ctypes

import jax.numpy as jnp

print(jnp.ones(2).sum())
ctypes.string_at(0)
