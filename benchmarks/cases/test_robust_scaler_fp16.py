"""Pytest-style test module for a mixed-precision robust feature scaler written in
JAX: per-column median centring and MAD (median absolute deviation) scaling, with the
statistics computed on float16 feature matrices to save memory.  Each test compares
the JAX implementation with a NumPy reference computed on the same float16 array;
the tests are run directly at the bottom under __main__.
Origin: jnp.median on a float16 column with an even number of rows whose two middle values are large (~6e4): JAX averages the two middle values in float16 arithmetic, which overflows to inf, while np.median returns the finite 6.15e4.
Fix: use np.median (or upcast to float32 before jnp.median).
Owner: JAX
"""
import numpy as np
import jax
import jax.numpy as jnp


def robust_stats(x):
    """Column-wise median and MAD, kept in the input dtype."""
    med = jnp.median(x, axis=0)
    mad = jnp.median(jnp.abs(x - med), axis=0)
    return med, mad


@jax.jit
def robust_scale(x, med, mad, eps=1e-3):
    scale = jnp.maximum(mad.astype(jnp.float32) * 1.4826, eps)
    return (x.astype(jnp.float32) - med.astype(jnp.float32)) / scale


def np_robust_stats(x):
    med = np.median(x, axis=0)
    mad = np.median(np.abs(x - med), axis=0)
    return med, mad


def make_features(seed=0, n=256):
    rng = np.random.default_rng(seed)
    clicks = rng.poisson(12.0, size=n)
    dwell_ms = rng.normal(61_500.0, 800.0, size=n)  # page dwell time in ms
    price = rng.lognormal(3.0, 0.5, size=n)
    return np.stack([clicks, dwell_ms, price], axis=1).astype(np.float16)


def test_median_small_values():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]], np.float16)
    med, _ = robust_stats(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(med, np.float32), np.median(x, axis=0), rtol=1e-3)


def test_scaled_output_shape():
    x = make_features(1, n=32)
    med, mad = robust_stats(jnp.asarray(x))
    out = robust_scale(jnp.asarray(x), med, mad)
    assert out.shape == x.shape
    assert out.dtype == jnp.float32


def test_stats_match_numpy():
    x = make_features(0)
    med, mad = robust_stats(jnp.asarray(x))
    ref_med, ref_mad = np_robust_stats(x)
    np.testing.assert_allclose(np.asarray(med, np.float32), ref_med.astype(np.float32), rtol=1e-3)
    np.testing.assert_allclose(np.asarray(mad, np.float32), ref_mad.astype(np.float32), rtol=1e-2, atol=1.0)


def test_scaled_columns_are_centred():
    x = make_features(0)
    med, mad = robust_stats(jnp.asarray(x))
    out = np.asarray(robust_scale(jnp.asarray(x), med, mad))
    assert np.isfinite(out).all(), "robust scaling produced non-finite features"
    assert np.all(np.abs(np.median(out, axis=0)) < 0.05)


if __name__ == "__main__":
    for name, fn in list(globals().items()):
        if name.startswith("test_") and callable(fn):
            fn()
            print(f"{name} PASSED")
