"""Origin: NaN in grad of sqrt (a where-masked sqrt of a zero squared error at padded steps)
Fix: the inner where: jnp.sqrt(jnp.where(r2 > 0, r2, 1.0)) inside the outer where.

Trajectory regressor (Flax NNX) with a Huber loss on the Euclidean error.

Sequences are padded to a fixed length; padded steps are masked out of both
the prediction and the target before the loss is computed.
"""
import jax
import jax.numpy as jnp
import optax
from flax import nnx

SEQ_LEN = 12
FEAT = 6
OUT = 2
DELTA = 1.0


class TrajectoryMLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(FEAT, 32, rngs=rngs)
        self.head = nnx.Linear(32, OUT, rngs=rngs)

    def __call__(self, x):
        h = nnx.gelu(self.fc1(x))
        return self.head(h)


def euclidean_huber(pred, target, mask):
    # mask out padded steps in both tensors so they contribute nothing
    pred = pred * mask[..., None]
    target = target * mask[..., None]
    r2 = jnp.sum((pred - target) ** 2, axis=-1)
    # avoid sqrt(0) for padded steps
    dist = jnp.where(r2 > 0, jnp.sqrt(r2), 0.0)
    per_step = jnp.where(dist < DELTA, 0.5 * dist ** 2, DELTA * (dist - 0.5 * DELTA))
    return jnp.sum(per_step * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def make_batch(key, batch_size=8):
    kx, ky, kl = jax.random.split(key, 3)
    x = jax.random.normal(kx, (batch_size, SEQ_LEN, FEAT))
    y = jnp.cumsum(0.1 * jax.random.normal(ky, (batch_size, SEQ_LEN, OUT)), axis=1)
    lengths = jax.random.randint(kl, (batch_size,), 4, SEQ_LEN + 1)
    mask = (jnp.arange(SEQ_LEN)[None, :] < lengths[:, None]).astype(jnp.float32)
    return x * mask[..., None], y * mask[..., None], mask


@nnx.jit
def train_step(model, optimizer, x, y, mask):
    def loss_fn(model):
        pred = model(x)
        return euclidean_huber(pred, y, mask)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss, grads


def main():
    model = TrajectoryMLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(3e-3, weight_decay=1e-4), wrt=nnx.Param)
    key = jax.random.PRNGKey(42)
    for step in range(3):
        key, sub = jax.random.split(key)
        x, y, mask = make_batch(sub)
        loss, grads = train_step(model, optimizer, x, y, mask)
        gnorm = optax.global_norm(grads)
        print(f"step {step}: loss={float(loss):.5f} grad_norm={float(gnorm):.5f}")
        assert jnp.isfinite(loss), f"non-finite loss at step {step}: {loss}"
        assert jnp.isfinite(gnorm), f"non-finite gradient norm at step {step}: {gnorm}"
    print("training finished")


if __name__ == "__main__":
    main()
