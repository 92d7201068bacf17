"""Reads its inputs from a file beside it; the check on them fails."""
import numpy as np

data = np.load("inputs.npz")
x = data["x"]
w = data["w"]
y = (x @ w).sum()
assert y < 0, f"expected a negative sum, got {y}"
