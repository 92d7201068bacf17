"""Monocular depth estimation from RGB-D frames with Flax linen + Optax.

A small fully-convolutional net predicts a per-pixel depth map (metres) from an
RGB image. Since a single image only fixes depth up to a global scale, the loss
is a scale-invariant Huber loss on log-depth: the per-image mean log-ratio is
removed before the Huber penalty. Frames come from a simulated depth sensor.
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import flax.linen as nn

H = W = 24
BATCH = 8


class DepthNet(nn.Module):
    @nn.compact
    def __call__(self, img):
        h = nn.relu(nn.Conv(16, (3, 3))(img))
        h = nn.relu(nn.Conv(32, (3, 3))(h))
        h = nn.relu(nn.Conv(16, (3, 3))(h))
        return nn.softplus(nn.Conv(1, (3, 3))(h))[..., 0] + 1e-3


def scale_invariant_huber(pred, target, delta=0.1):
    d = jnp.log(pred) - jnp.log(target)               # per-pixel log ratio
    d = d - jnp.mean(d, axis=(1, 2), keepdims=True)  # remove the per-image global scale
    return jnp.mean(optax.huber_loss(d, delta=delta))


def make_frames(rng, n):
    rows = np.linspace(0.0, 1.0, H)[:, None] * np.ones((1, W))
    depth = np.empty((n, H, W))
    for i in range(n):
        floor = 1.0 + 9.0 * (1.0 - rows) ** 2          # floor receding to the horizon
        y0, x0 = rng.integers(4, 16, 2)
        box = np.zeros((H, W), bool)
        box[y0:y0 + 6, x0:x0 + 6] = True
        depth[i] = np.where(box, rng.uniform(1.5, 4.0), floor)
    shade = 1.0 / depth
    img = np.stack([shade, 0.5 * shade + 0.1, np.sqrt(shade)], axis=-1)
    img += 0.02 * rng.normal(size=img.shape)
    # the sensor's range is 0.3-8 m and it drops ~2% of pixels (specular surfaces)
    measured = np.where((depth > 8.0) | (rng.uniform(size=depth.shape) < 0.02), 0.0, depth)
    return jnp.asarray(img, jnp.float32), jnp.asarray(measured, jnp.float32)


model = DepthNet()


@jax.jit
def train_step(params, opt_state, img, depth):
    def loss_fn(p):
        return scale_invariant_huber(model.apply(p, img), depth)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


rng = np.random.default_rng(0)
params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, H, W, 3)))
tx = optax.adamw(1e-3, weight_decay=1e-4)
opt_state = tx.init(params)

for step in range(30):
    img, depth = make_frames(rng, BATCH)
    params, opt_state, loss = train_step(params, opt_state, img, depth)
    assert jnp.isfinite(loss), f"step {step}: loss is {loss}"
    if step % 10 == 0:
        print(f"step {step:3d}  loss {float(loss):.4f}")
print("final loss", float(loss))
