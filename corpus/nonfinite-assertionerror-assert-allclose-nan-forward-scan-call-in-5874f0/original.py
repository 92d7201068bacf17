"""Tests for a radial Bessel-basis interaction model (DimeNet-style).

Interatomic distances r are expanded into the cylindrical Bessel functions
J_0 .. J_{N_ORDER} evaluated at (FREQ * r), then fed into a small Flax MLP
that predicts a pairwise energy contribution.
"""
import numpy as np
import scipy.special
import jax
import jax.numpy as jnp
import flax.linen as nn

N_ORDER = 2
FREQ = 1.5
CUTOFF = 5.0


@jax.jit
def bessel_basis(r):
    """Return an array of shape (len(r), N_ORDER + 1) with J_n(FREQ * r)."""
    x = FREQ * r
    jn = jax.scipy.special.bessel_jn(x, v=N_ORDER)   # shape (N_ORDER + 1, len(r))
    return jn.T


def cosine_cutoff(r):
    """Smoothly switch interactions off at CUTOFF."""
    return jnp.where(r < CUTOFF, 0.5 * (jnp.cos(jnp.pi * r / CUTOFF) + 1.0), 0.0)


class PairEnergy(nn.Module):
    hidden: int = 16

    @nn.compact
    def __call__(self, r):
        feats = bessel_basis(r) * cosine_cutoff(r)[:, None]
        h = nn.silu(nn.Dense(self.hidden)(feats))
        h = nn.silu(nn.Dense(self.hidden)(h))
        return nn.Dense(1)(h)[:, 0]


def sample_distances(n=24, seed=0):
    """Typical bond lengths (Angstrom) from a small molecule set."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.uniform(0.8, CUTOFF, size=n)).astype(np.float32)


def test_model_output_shape():
    r = jnp.asarray(sample_distances())
    model = PairEnergy()
    params = model.init(jax.random.PRNGKey(0), r)
    energies = model.apply(params, r)
    assert energies.shape == r.shape
    print(f"test_model_output_shape: ok, total energy {float(energies.sum()):.4f}")


def test_bessel_basis_matches_scipy():
    r = sample_distances()
    got = np.asarray(bessel_basis(jnp.asarray(r)))
    orders = np.arange(N_ORDER + 1)
    expected = scipy.special.jv(orders[None, :], FREQ * r[:, None])
    print(f"test_bessel_basis_matches_scipy: comparing {got.shape} basis values")
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    print("test_bessel_basis_matches_scipy: ok")


if __name__ == "__main__":
    test_model_output_shape()
    test_bessel_basis_matches_scipy()
    print("all tests passed")
