"""Pytest suite of small JAX ops, parametrized as users write it: in each test one case fails."""
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

CONFIG = {"precision": 6}
DTYPES = ("float32", "float16")


def softplus(x):
    return jnp.logaddexp(x, 0.0)


def centered(x):
    return x - x.mean()


def running_lse(x):
    from enzyme_ad.jax import enzyme_jax_ir  # Enzyme-JAX has no reverse rule for reduce_window

    return enzyme_jax_ir()(jax.lax.cumlogsumexp)(x)


def swish(x):
    return x * jax.nn.sigmoid(x)


OPS = {"softplus": softplus, "centered": centered, "running_lse": running_lse, "swish": swish}


def naive_softmax(logits):
    e = jnp.exp(logits)
    return e / e.sum()


def save(x, path):
    if path.suffix == ".npy":
        np.save(path, np.asarray(x))
    else:
        np.savetxt(path, np.asarray(x), fmt=f"%.{CONFIG['precision']}f")
    if os.environ.get("OPS_VERBOSE"):
        print(f"saved {path.name}")


def load(path):
    return jnp.asarray(np.load(path) if path.suffix == ".npy" else np.loadtxt(path, dtype=np.float32))


@pytest.fixture
def x(key):
    return jax.random.normal(key, (6,))


@pytest.fixture
def signal(request):
    n = request.param
    return jnp.sin(jnp.linspace(0.0, 1.0, n))


@pytest.fixture(params=["relu", "sigmoid", "silu"], ids=str.upper)
def activation(request):
    return getattr(jax.nn, request.param)


@pytest.mark.parametrize("name", sorted(OPS))
def test_grad_is_finite(name, x):
    g = jax.jit(jax.grad(lambda v: OPS[name](v).sum()))(x)
    assert jnp.isfinite(g).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [1.0, 10.0])
def test_softmax_is_finite(scale, dtype, key):
    logits = (scale * jax.random.normal(key, (16,))).astype(dtype)
    p = naive_softmax(logits)
    assert jnp.isfinite(p).all(), f"softmax overflowed: {p}"


@pytest.mark.parametrize("shape", [(2, 3), (4,), ()], ids=["matrix", "vector", "scalar"])
def test_norm_along_first_axis(shape, key):
    v = jax.random.normal(key, shape)
    assert jnp.allclose(jnp.linalg.norm(v, axis=0), jnp.sqrt((v ** 2).sum(axis=0)))


@pytest.mark.parametrize("steps, expected", [
    (1, 0.5),
    pytest.param(200, 2.0 ** -200, id="underflow", marks=pytest.mark.slow),
    pytest.param(3, 0.125, id="three"),
    pytest.param(40, 2.0 ** -40, id="forty"),
])
def test_halving(steps, expected):
    v = jnp.float32(1.0)
    for _ in range(steps):
        v = v / 2
    assert v == expected


@pytest.mark.parametrize("signal", [4, 0], indirect=True, ids=["four", "empty"])
def test_peak_is_positive(signal):
    assert jnp.max(signal) >= 0


def test_activation_at_zero(activation):
    assert activation(jnp.float32(0.0)) == 0.0


@pytest.mark.parametrize("suffix", [".npy", ".txt"])
def test_roundtrip(suffix, x, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPS_VERBOSE", "1")
    monkeypatch.setitem(CONFIG, "precision", 3)
    save(x, tmp_path / f"x{suffix}")
    assert capsys.readouterr().out == f"saved x{suffix}\n"
    np.testing.assert_array_equal(load(tmp_path / f"x{suffix}"), x)


class TestClip:
    @pytest.mark.parametrize(("lo", "hi"), [(0.0, 1.0), (-1.0, 1.0), (1.0, 0.0)])
    def test_clip_in_range(self, lo, hi, x):
        y = jnp.clip(x, lo, hi)
        assert ((y >= lo) & (y <= hi)).all(), f"{y} not in [{lo}, {hi}]"
