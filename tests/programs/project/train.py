"""Trains a spectral model on a toy signal: a local package (spectra/) holds the model and its ops.

With the default `--floor 0.0` the log-power of a zero frequency bin is -inf and its gradient NaN."""
import argparse

import jax
import jax.numpy as jnp

from spectra import SpectralModel
from spectra.ops import normalise


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--floor", type=float, default=0.0)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    model = SpectralModel(n=8, floor=args.floor)
    signal = normalise(jnp.ones(8))  # a constant signal: every bin but the first is zero
    weights = jnp.ones(5)
    history = []
    for step in range(args.steps):
        loss, grads = jax.value_and_grad(model.loss)(weights, signal)
        assert not jnp.isnan(grads).any(), f"NaN gradient at step {step}"
        weights = weights - args.lr * grads
        history.append(float(loss))
    print("losses", history)


if __name__ == "__main__":
    main()
