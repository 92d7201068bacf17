# Also fails, differently: jax-error: library=jax type=TypeError raised-in=jax/_src/api_util.py:check_callable message=Expected a callable value, got <value>
import jax
import jax.numpy as jnp
from jax import lax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jnp.ones((1, 7, 1), jnp.float32))
