"""Feature moments of a rank-7 activation tensor (batch, heads, groups, pairs, x, y, z), as a
physics-style model computes them under `jit`: jaxlib 0.10.2 on CPU dies with SIGSEGV running the
compiled module (jax-ml/jax#40412). Writes the lowered module (`jax.jit(f).lower(...).as_text()`)."""
import sys

import jax
import jax.numpy as jnp

SHAPE = (3, 1, 2, 2, 8, 8, 8)


def moments(a, b, bias, scale):
    pair = jnp.sum(a * b, axis=3)  # the reduction over the pair axis
    feature = jnp.tanh(pair) * scale + jnp.mean(bias)
    return feature, jnp.max(jnp.abs(feature))


x = jnp.ones(SHAPE, jnp.float32)
text = jax.jit(moments).lower(x, x, x, jnp.float32(2.0)).as_text()
open(sys.argv[1], "w").write(text)
