"""A test for a Flax NNX temporal downsampling block, ported from a PyTorch model: project the
features, halve the sequence length with linear interpolation, ReLU, project back. The NumPy reference
follows PyTorch's `F.interpolate(mode="linear", align_corners=False)`, which for a factor of two
averages neighbouring frames; `jax.image.resize` antialiases when it downsamples (a triangle filter
twice as wide), so the two disagree and `assert_allclose` fails after a few training steps."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class Downsample(nnx.Module):
    def __init__(self, features: int, hidden: int, rngs: nnx.Rngs):
        self.proj = nnx.Linear(features, hidden, rngs=rngs)
        self.out = nnx.Linear(hidden, features, rngs=rngs)

    def __call__(self, x):
        b, t, _ = x.shape
        h = self.proj(x)
        h = jax.image.resize(h, (b, t // 2, h.shape[-1]), method="linear")
        return self.out(jax.nn.relu(h))


def reference_downsample(x, params):
    """NumPy port of the PyTorch module (half-pixel centres, no antialiasing)."""
    x = np.asarray(x, np.float64)
    h = x @ np.asarray(params["proj"]["kernel"]) + np.asarray(params["proj"]["bias"])
    h = 0.5 * (h[:, 0::2] + h[:, 1::2])
    h = np.maximum(h, 0.0)
    return h @ np.asarray(params["out"]["kernel"]) + np.asarray(params["out"]["bias"])


def train(model, x, target, steps=3):
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

    @nnx.jit
    def step(model, optimizer):
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - target) ** 2))(model)
        optimizer.update(model, grads)
        return loss

    for _ in range(steps):
        step(model, optimizer)


def test_downsample_matches_pytorch_reference():
    model = Downsample(8, 16, nnx.Rngs(0))
    x = jax.random.normal(jax.random.PRNGKey(1), (4, 16, 8))
    target = jax.random.normal(jax.random.PRNGKey(2), (4, 8, 8))
    train(model, x, target)
    params = nnx.to_pure_dict(nnx.state(model, nnx.Param))
    out = nnx.jit(lambda m, x: m(x))(model, x)
    np.testing.assert_allclose(np.asarray(out), reference_downsample(x, params), rtol=1e-4, atol=1e-5)


if __name__ == "__main__":
    test_downsample_matches_pytorch_reference()
    print("ok")
