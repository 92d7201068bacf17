"""A Flax NNX Deep Sets regressor: every set of items is padded to a fixed size, each item gets a
learned attention weight, and the set is pooled as the weighted mean sum(w * h) / sum(w). Empty sets
(all padding) have sum(w) == 0 exactly, so the pooling guards the ratio with
`jnp.where(den > 0, num / den, 0.0)`: the forward pass is fine, but the derivative of num / den at
den == 0 is 0 / 0, and the `where` cannot mask a NaN. The training loop asserts finite gradients."""
import flax.nnx as nnx
import jax
import jax.numpy as jnp
import optax

MAX_ITEMS = 6


class SetRegressor(nnx.Module):
    def __init__(self, features, hidden, rngs):
        self.embed = nnx.Linear(features, hidden, rngs=rngs)
        self.gate = nnx.Linear(hidden, 1, rngs=rngs)
        self.head = nnx.Linear(hidden, 1, rngs=rngs)

    def __call__(self, items, mask):
        h = jax.nn.gelu(self.embed(items))
        w = jax.nn.sigmoid(self.gate(h))[..., 0] * mask
        num = jnp.sum(w[..., None] * h, axis=1)
        den = jnp.sum(w, axis=1, keepdims=True)
        pooled = jnp.where(den > 0, num / den, 0.0)
        return self.head(pooled)[:, 0]


def make_batch(key, sizes, features=3):
    items = jax.random.normal(key, (len(sizes), MAX_ITEMS, features))
    mask = (jnp.arange(MAX_ITEMS)[None, :] < jnp.array(sizes)[:, None]).astype(jnp.float32)
    items = items * mask[..., None]
    targets = jnp.sum(items[..., 0], axis=1) / jnp.maximum(jnp.array(sizes), 1)
    return items, mask, targets


def loss_fn(model, items, mask, targets):
    return jnp.mean((model(items, mask) - targets) ** 2)


@nnx.jit
def train_step(model, optimizer, items, mask, targets):
    loss, grads = nnx.value_and_grad(loss_fn)(model, items, mask, targets)
    optimizer.update(model, grads)
    return loss, grads


def main():
    model = SetRegressor(3, 16, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    batches = [[3, 5, 6, 2], [4, 0, 1, 6], [2, 2, 5, 3]]
    for step, sizes in enumerate(batches):
        items, mask, targets = make_batch(jax.random.PRNGKey(step), sizes)
        loss, grads = train_step(model, optimizer, items, mask, targets)
        norm = optax.global_norm(grads)
        assert jnp.isfinite(norm), f"step {step}: gradient norm {norm} (loss {loss:.4f})"
        print(f"step {step}: loss {loss:.4f}")


if __name__ == "__main__":
    main()
