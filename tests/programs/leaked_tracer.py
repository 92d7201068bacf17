"""A tracer kept past the end of its jit trace and used later: JAX raises UnexpectedTracerError."""
import jax
import jax.numpy as jnp

seen = []


@jax.jit
def scale(x):
    seen.append(x)  # the tracer escapes the trace
    return 2.0 * x


scale(jnp.arange(3.0))
print(jnp.sum(seen[0] + 1.0))
