"""A test-style comparison with a NumPy reference that fails: float32 softplus loses precision."""
import numpy as np


def softplus(x):
    return np.log1p(np.exp(x.astype(np.float32)))


x = np.linspace(-30.0, 30.0, 7)
np.testing.assert_allclose(softplus(x), np.logaddexp(0.0, x), rtol=1e-9)
