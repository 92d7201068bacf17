"""Squared norms of rotated points of a point cloud with more than 32768 points, then a soft
radius penalty on the centred cloud: under `jit`, XLA:CPU (jaxlib 0.10.2) returns wrong norms past index 32767
(jax-ml/jax#39103). Writes the lowered module."""
import sys

import jax
import jax.numpy as jnp

N = 32_769


def penalty(points, rotation, radius):
    centred = points - jnp.mean(points, axis=0)
    norms = jax.vmap(lambda p: jnp.sum((rotation @ p) ** 2))(centred)
    return norms, jnp.mean(jax.nn.relu(jnp.sqrt(norms + 1e-12) - radius) ** 2)


points = jnp.zeros((N, 3), jnp.float32)
text = jax.jit(penalty).lower(points, jnp.eye(3, dtype=jnp.float32), jnp.float32(1.0)).as_text()
open(sys.argv[1], "w").write(text)
