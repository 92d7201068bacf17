"""A Gaussian-process negative log likelihood lowered for the GPU (`lowering_platforms=("cuda",)`,
as a module exported on a workstation and run elsewhere), then handed to XLA on the CPU: the
cuSOLVER custom call has no CPU handler, and XLA refuses to compile it. Writes the lowered module."""
import sys

import jax
import jax.numpy as jnp


def nll(x, y, lengthscale, noise):
    d = jnp.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    k = jnp.exp(-0.5 * d / lengthscale ** 2) + noise * jnp.eye(x.shape[0])
    chol = jnp.linalg.cholesky(k)
    alpha = jax.scipy.linalg.cho_solve((chol, True), y)
    return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(chol)))


x = jnp.zeros((16, 2), jnp.float32)
y = jnp.zeros((16,), jnp.float32)
lowered = jax.jit(nll).trace(x, y, jnp.float32(1.0), jnp.float32(0.1)).lower(lowering_platforms=("cuda",))
open(sys.argv[1], "w").write(lowered.as_text())
