"""Computes its result, then dies by SIGSEGV in an exit handler, while the interpreter shuts down."""
import atexit
import ctypes

import jax.numpy as jnp

atexit.register(ctypes.string_at, 0)
print(jnp.arange(3.0).sum())
