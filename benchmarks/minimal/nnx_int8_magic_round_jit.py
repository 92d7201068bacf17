import jax, jax.numpy as jnp
q = jax.jit(lambda x: (x + 12582912.0) - 12582912.0)(jnp.float32(0.3))
assert q == 0.0, f"magic-number rounding not applied under jit: {q}"
