"""Never ends: after a small JAX computation, a loop that waits forever (no exception, no crash).
With `reducer reduce --hangs` the hang is the failure."""
import time

import jax.numpy as jnp

total = jnp.arange(4.0).sum()
print("sum:", float(total))
while True:
    time.sleep(0.1)
