"""XLA's algebraic simplifier folds the float32 rounding trick `(x + 1.5 * 2**23) - 1.5 * 2**23` to `x` under
`jit` (op by op it rounds); fixed by `jnp.round`.

Train a small Flax NNX MLP on a synthetic 4-class problem, then apply
symmetric per-channel int8 post-training quantization to the weights and
check that the fake-quantized weights lie exactly on the int8 grid.

Rounding uses the classic float32 "magic number" trick: adding and then
subtracting 1.5 * 2**23 rounds a float32 with |x| < 2**22 to the nearest
integer (ties to even), which is branch-free and cheap.
"""
import sys

import numpy as np
import jax
import jax.numpy as jnp
import optax
from flax import nnx

SEED = 7
N_TRAIN = 1024
N_FEAT = 10
N_CLASSES = 4
HIDDEN = 32
BATCH = 128
EPOCHS = 8
LR = 5e-3
QMAX = 127.0
ROUND_MAGIC = 1.5 * 2.0 ** 23


# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------
def make_centers(rng):
    return rng.normal(scale=2.0, size=(N_CLASSES, N_FEAT)).astype(np.float32)


def make_blobs(rng, centers, n):
    y = rng.integers(0, N_CLASSES, size=n)
    x = centers[y] + rng.normal(size=(n, N_FEAT)).astype(np.float32)
    return x.astype(np.float32), y.astype(np.int32)


# --------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------
class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(N_FEAT, HIDDEN, rngs=rngs)
        self.fc2 = nnx.Linear(HIDDEN, HIDDEN, rngs=rngs)
        self.out = nnx.Linear(HIDDEN, N_CLASSES, rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.fc1(x))
        x = nnx.relu(self.fc2(x))
        return self.out(x)


def loss_fn(model, x, y):
    logits = model(x)
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    return loss, logits


@nnx.jit
def train_step(model, optimizer, x, y):
    (loss, logits), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model, x, y)
    optimizer.update(model, grads)
    acc = jnp.mean(jnp.argmax(logits, -1) == y)
    return loss, acc


@nnx.jit
def accuracy(model, x, y):
    return jnp.mean(jnp.argmax(model(x), -1) == y)


# --------------------------------------------------------------------------
# quantization
# --------------------------------------------------------------------------
def round_half_even(x):
    # float32 magic-number rounding, valid for |x| < 2**22
    return (x + ROUND_MAGIC) - ROUND_MAGIC


def fake_quant_kernel(w):
    """Symmetric per-output-channel int8 fake quantization of a (in, out) kernel."""
    scale = jnp.max(jnp.abs(w), axis=0, keepdims=True) / QMAX
    scale = jnp.where(scale == 0, 1.0, scale)
    codes = jnp.clip(round_half_even(w / scale), -QMAX, QMAX)
    return codes * scale, codes, scale


@jax.jit
def quantize_params(params):
    """Quantize every 2-D kernel in a params pytree; biases stay in float.

    Returns the fake-quantized params (same structure) and the per-kernel
    scales (None for leaves that are not quantized)."""
    def q(leaf):
        if leaf.ndim == 2:
            wq, _, scale = fake_quant_kernel(leaf)
            return wq, scale
        return leaf, None
    pairs = jax.tree_util.tree_map(q, params)
    is_pair = lambda t: isinstance(t, tuple)
    qparams = jax.tree_util.tree_map(lambda t: t[0], pairs, is_leaf=is_pair)
    scales = jax.tree_util.tree_map(lambda t: t[1], pairs, is_leaf=is_pair)
    return qparams, scales


def kernel_items(tree):
    """(name, array) for every 2-D leaf of a nested dict, in a stable order."""
    flat = jax.tree_util.tree_leaves_with_path(tree)
    return [(jax.tree_util.keystr(p), np.asarray(v)) for p, v in flat
            if np.asarray(v).ndim == 2]


def apply_quantized(model, qparams):
    graphdef, state = nnx.split(model)
    nnx.replace_by_pure_dict(state, qparams)
    return nnx.merge(graphdef, state)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------
def train():
    rng = np.random.default_rng(SEED)
    centers = make_centers(rng)
    x, y = make_blobs(rng, centers, N_TRAIN)
    x_val, y_val = make_blobs(np.random.default_rng(SEED + 1), centers, 256)
    model = MLP(nnx.Rngs(SEED))
    optimizer = nnx.Optimizer(model, optax.adam(LR), wrt=nnx.Param)
    for epoch in range(EPOCHS):
        perm = rng.permutation(N_TRAIN)
        for s in range(0, N_TRAIN, BATCH):
            idx = perm[s:s + BATCH]
            loss, acc = train_step(model, optimizer, jnp.asarray(x[idx]),
                                   jnp.asarray(y[idx]))
        if not np.isfinite(float(loss)):
            sys.exit(f"epoch {epoch}: non-finite loss")
        print(f"epoch {epoch}  loss {float(loss):.4f}  acc {float(acc):.3f}")
    return model, x_val, y_val


def test_quantized_weights_on_int8_grid():
    model, x_val, y_val = train()
    float_acc = float(accuracy(model, jnp.asarray(x_val), jnp.asarray(y_val)))

    _, state = nnx.split(model, nnx.Param)
    params = nnx.to_pure_dict(state)
    qparams, _ = quantize_params(params)

    qmodel = apply_quantized(model, qparams)
    q_acc = float(accuracy(qmodel, jnp.asarray(x_val), jnp.asarray(y_val)))
    print(f"val accuracy: float {float_acc:.3f}  int8 {q_acc:.3f}")

    for (name, w), (_, wq) in zip(kernel_items(params), kernel_items(qparams)):
        w64 = w.astype(np.float64)
        scale = np.abs(w64).max(axis=0, keepdims=True) / QMAX
        ref = np.clip(np.round(w64 / scale), -QMAX, QMAX) * scale
        err = np.max(np.abs(wq - ref) / scale)
        print(f"{name:20s} shape {w.shape}  max |q - ref| = {err:.3f} LSB")
        assert err < 1e-2, (f"{name}: fake-quantized weights are off the int8 grid "
                            f"(max deviation {err:.3f} LSB from NumPy reference)")
    assert abs(q_acc - float_acc) < 0.05, "int8 quantization hurt accuracy"


if __name__ == "__main__":
    test_quantized_weights_on_int8_grid()
    print("OK")
