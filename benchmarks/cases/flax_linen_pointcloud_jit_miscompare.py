"""Depth regression on a voxelised point cloud (Flax linen + Optax).

Each scan is a list of integer voxel coordinates; the model rotates them into the camera frame with a
learned 3x3 matrix, sums the rotated coordinates into a per-point depth, and regresses a per-point
label through a small MLP. The evaluation test compares the jitted eval step with the same step run
op by op, and they disagree for scans with more than 32768 points.
"""
import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

NUM_POINTS = 40000
HIDDEN = 16


class CameraFrame(nn.Module):
    @nn.compact
    def __call__(self, voxels):
        rotation = self.param("rotation", lambda key, shape: jnp.eye(3), (3, 3))
        camera = rotation @ voxels.T
        return jnp.sum(camera, axis=0)


class DepthHead(nn.Module):
    hidden: int = HIDDEN

    @nn.compact
    def __call__(self, depth):
        h = nn.Dense(self.hidden)(depth[:, None] / NUM_POINTS)
        h = nn.relu(h)
        return nn.Dense(1)(h)[:, 0]


class DepthModel(nn.Module):
    def setup(self):
        self.frame = CameraFrame()
        self.head = DepthHead()

    def __call__(self, voxels):
        depth = self.frame(voxels)
        return depth, self.head(depth)


def make_scan(seed):
    rng = np.random.default_rng(seed)
    idx = np.arange(NUM_POINTS)
    voxels = np.stack([idx, idx, idx], axis=1).astype(np.int32)
    labels = rng.normal(size=NUM_POINTS).astype(np.float32)
    return jnp.asarray(voxels), jnp.asarray(labels)


model = DepthModel()
voxels, labels = make_scan(0)
params = model.init(jax.random.PRNGKey(0), voxels)
tx = optax.adam(1e-3)
opt_state = tx.init(params)


def loss_fn(params, voxels, labels):
    _, pred = model.apply(params, voxels)
    return jnp.mean((pred - labels) ** 2)


@functools.partial(jax.jit, donate_argnums=(1,))
def train_step(params, opt_state, voxels, labels):
    loss, grads = jax.value_and_grad(loss_fn)(params, voxels, labels)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def eval_step(params, voxels):
    depth, _ = model.apply(params, voxels)
    return depth


for step in range(2):
    params, opt_state, loss = train_step(params, opt_state, voxels, labels)
    print(f"step {step}: loss {float(loss):.4f}")

fast = jax.jit(eval_step)(params, voxels)
with jax.disable_jit():
    slow = eval_step(params, voxels)
worst = int(jnp.argmax(jnp.abs(fast - slow)))
print("largest difference at point", worst, float(fast[worst]), float(slow[worst]))
np.testing.assert_allclose(np.asarray(fast), np.asarray(slow), rtol=1e-5)
