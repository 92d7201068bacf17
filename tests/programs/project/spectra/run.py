"""`python -m spectra.run`: the same training, as a module of the package (relative imports)."""
import argparse

import jax
import jax.numpy as jnp

from .model import SpectralModel
from .ops import normalise

parser = argparse.ArgumentParser()
parser.add_argument("--floor", type=float, default=0.0)
args = parser.parse_args()
model = SpectralModel(n=8, floor=args.floor)
grads = jax.grad(model.loss)(jnp.ones(5), normalise(jnp.ones(8)))
assert not jnp.isnan(grads).any(), "NaN gradient"
print("ok", grads)
