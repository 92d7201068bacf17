"""Origin: mismatch (Enzyme-JAX NaN where JAX is finite) in grad of div via jnp.sinc (at 0: the centre tap)
Fix: differentiate the loss with jax.grad instead of Enzyme-JAX's enzyme_jax_ir (or keep sinc's argument off 0).

A SincNet-style front end in Flax NNX: a bank of band-pass filters `2 f2 sinc(2 f2 t) - 2 f1 sinc(2 f1 t)`
with learnable cut-off frequencies, windowed and convolved with raw waveforms, then log filter
energies and a linear classifier. A pytest-style test checks that Enzyme-JAX's gradient of the
cross-entropy (`enzyme_jax_ir()` around the loss of `nnx.split` state) agrees with `jax.grad`. The
filter taps are symmetric around t = 0, so `jnp.sinc` is evaluated at exactly 0 at the centre tap.
JAX's `sinc` guards that point (an inner `where` and a custom JVP) and its derivative there is 0;
Enzyme-JAX 0.0.16 folds the guard away (inside the outer `where`'s other branch the inner one is
taken to be x), differentiates `sin(pi x) / (pi x)` at 0 and returns NaN for the cut-off
frequencies, so `np.testing.assert_allclose` fails.
"""
import flax.nnx as nnx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from enzyme_ad.jax import enzyme_jax_ir

SAMPLE_RATE, KERNEL, N_FILTERS, N_CLASSES = 8000, 33, 8, 4


class SincConv(nnx.Module):
    def __init__(self, n_filters, kernel_size, sample_rate):
        edges = np.linspace(50.0, sample_rate / 2 - 400.0, n_filters + 1)
        self.low_hz = nnx.Param(jnp.asarray(edges[:-1] / sample_rate, jnp.float32))
        self.band_hz = nnx.Param(jnp.asarray(np.diff(edges) / sample_rate, jnp.float32))
        self.kernel_size = kernel_size

    def filters(self):
        half = self.kernel_size // 2
        t = jnp.arange(-half, half + 1, dtype=jnp.float32)
        f1 = jnp.abs(self.low_hz.value)[:, None]
        f2 = f1 + jnp.abs(self.band_hz.value)[:, None]
        band = 2 * f2 * jnp.sinc(2 * f2 * t) - 2 * f1 * jnp.sinc(2 * f1 * t)
        return band * jnp.hamming(self.kernel_size)

    def __call__(self, wave):
        kernels = self.filters()[:, None, :]
        return jax.lax.conv_general_dilated(wave[:, None, :], kernels, (1,), "VALID")


class SincNet(nnx.Module):
    def __init__(self, rngs):
        self.sinc = SincConv(N_FILTERS, KERNEL, SAMPLE_RATE)
        self.head = nnx.Linear(N_FILTERS, N_CLASSES, rngs=rngs)

    def __call__(self, wave):
        energy = jnp.mean(self.sinc(wave) ** 2, axis=-1)
        return self.head(jnp.log(energy + 1e-6))


def make_tones(n, length=400, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, N_CLASSES, n)
    freqs = 300.0 + 800.0 * labels + rng.uniform(-100, 100, n)
    t = np.arange(length) / SAMPLE_RATE
    waves = np.sin(2 * np.pi * freqs[:, None] * t) + 0.2 * rng.standard_normal((n, length))
    return jnp.asarray(waves, jnp.float32), jnp.asarray(labels, jnp.int32)


def test_enzyme_gradient_matches_jax():
    waves, labels = make_tones(16)
    graphdef, state = nnx.split(SincNet(nnx.Rngs(0)))

    def loss_fn(state, waves, labels):
        logits = nnx.merge(graphdef, state)(waves)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    enzyme_grads = jax.jit(jax.grad(enzyme_jax_ir()(loss_fn)))(state, waves, labels)
    jax_grads = jax.jit(jax.grad(loss_fn))(state, waves, labels)
    for (path, got), want in zip(jax.tree_util.tree_flatten_with_path(enzyme_grads)[0],
                                 jax.tree_util.tree_leaves(jax_grads)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6,
                                   err_msg=f"gradient of {jax.tree_util.keystr(path)}")


if __name__ == "__main__":
    test_enzyme_gradient_matches_jax()
    print("Enzyme-JAX and JAX gradients agree")
