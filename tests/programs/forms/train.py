"""A training script with flags, reading its data from an .npz file: JAX has no float16 Cholesky on the CPU."""
import argparse

import jax.numpy as jnp
import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--data", required=True)
parser.add_argument("--dtype", default="float32")
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()

x = jnp.asarray(np.load(args.data)["x"]).reshape(2, 2)
cov = x @ x.T + jnp.eye(2)
print(args.lr * jnp.linalg.cholesky(cov.astype(args.dtype)))
