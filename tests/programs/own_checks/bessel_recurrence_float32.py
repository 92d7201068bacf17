"""Radial basis features from `bessel_jn` (JAX's Bessel functions of the first kind) at small radii:
in float32 its backward recurrence overflows inside the call and every feature is NaN, though J_0..J_2
of 1.0 are about 0.77, 0.44 and 0.11. Float64 fixes it, but only inside `bessel_jn`: the call's."""
import jax.numpy as jnp
from jax.scipy.special import bessel_jn


def radial_features(r):
    return bessel_jn(r, v=2).T


r = jnp.ones(4)
features = radial_features(r)
assert jnp.isfinite(features).all(), f"features are {features}"
