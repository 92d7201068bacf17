import jax, jax.numpy as jnp
jax.config.update("jax_debug_infs", True)

step = jax.jit(jax.value_and_grad(lambda w, x: jnp.exp(jax.nn.relu(w * x))))
rejected = []
for i, x in enumerate([1.0, 1e4]):  # exp(1e4) -> inf, must raise FloatingPointError
    try:
        step(1.0, x)
    except FloatingPointError:
        rejected.append(i)
if 1 not in rejected:
    raise RuntimeError(f"glitched batch 1 was not rejected by jax_debug_infs (rejected={rejected})")
