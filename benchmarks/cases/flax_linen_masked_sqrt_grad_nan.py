"""Origin: NaN in grad of sqrt via jnp.sqrt (a jnp.where-masked per-sequence RMS error)
Fix: keep sqrt's input in its domain with an inner where: jnp.sqrt(jnp.where(lengths > 0, mse, 1.0)).

A Flax linen 1-D convolutional denoiser for variable-length sensor traces, trained with Optax
`adamw` on the per-sequence RMS error. Sequences are zero-padded to a fixed length (with a float
mask from the data loader) and the last batch of the epoch is filled up with empty sequences so
that `jax.jit` compiles once. The RMS guards the empty sequences with
`jnp.where(lengths > 0, jnp.sqrt(mse), 0.0)`: the forward is finite, but their mean squared error
is exactly 0 and the derivative of `sqrt` there is infinite; the `where` multiplies it by a zero
cotangent, the NaN reaches every gradient through the mask, and the training loop's finiteness
assertion fires on the last batch.
"""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

MAX_LEN, BATCH = 64, 16


class Denoiser(nn.Module):
    channels: int = 16

    @nn.compact
    def __call__(self, x):
        h = x[..., None]
        h = nn.gelu(nn.Conv(self.channels, kernel_size=(5,))(h))
        h = nn.gelu(nn.Conv(self.channels, kernel_size=(5,))(h))
        return x + nn.Conv(1, kernel_size=(3,))(h)[..., 0]


def make_traces(n, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(20, MAX_LEN + 1, n)
    t = np.arange(MAX_LEN)[None, :] / 10.0
    clean = np.sin(t * rng.uniform(0.5, 2.0, (n, 1)) + rng.uniform(0, 6.3, (n, 1)))
    mask = (np.arange(MAX_LEN)[None, :] < lengths[:, None]).astype(np.float32)
    noisy = clean + 0.3 * rng.standard_normal(clean.shape)
    return (noisy * mask).astype(np.float32), (clean * mask).astype(np.float32), mask


def batches(*arrays):
    for start in range(0, len(arrays[0]), BATCH):
        chunk = [a[start:start + BATCH] for a in arrays]
        pad = BATCH - len(chunk[0])
        yield tuple(np.pad(a, ((0, pad), (0, 0))) for a in chunk)


def masked_rms_loss(params, model, noisy, clean, mask):
    pred = model.apply({"params": params}, noisy)
    lengths = jnp.sum(mask, axis=1)
    mse = jnp.sum(mask * (pred - clean) ** 2, axis=1) / jnp.maximum(lengths, 1.0)
    rms = jnp.where(lengths > 0, jnp.sqrt(mse), 0.0)
    return jnp.sum(rms) / jnp.maximum(jnp.sum(lengths > 0), 1)


def main():
    model = Denoiser()
    noisy, clean, mask = make_traces(40)
    params = model.init(jax.random.PRNGKey(0), jnp.asarray(noisy[:BATCH]))["params"]
    optimizer = optax.adamw(1e-3, weight_decay=1e-4)
    opt_state = optimizer.init(params)

    @jax.jit
    def train_step(params, opt_state, noisy, clean, mask):
        loss, grads = jax.value_and_grad(masked_rms_loss)(params, model, noisy, clean, mask)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss, grads

    for epoch in range(3):
        for step, batch in enumerate(batches(noisy, clean, mask)):
            params, opt_state, loss, grads = train_step(params, opt_state, *batch)
            assert all(jnp.isfinite(g).all() for g in jax.tree_util.tree_leaves(grads)), \
                f"epoch {epoch} step {step}: non-finite gradients (loss {loss:.4f})"
        print(f"epoch {epoch}: loss {loss:.4f}")


if __name__ == "__main__":
    main()
