"""Origin: NaN in grad of sqrt via jnp.linalg.norm (pairwise distances, the zero diagonal included)
Fix: take the distance as jnp.sqrt(jnp.sum(diff ** 2, axis=-1) + 1e-12) (or optax.safe_norm) so a zero difference has a finite derivative.

A Flax NNX embedding network trained with an `nnx.Optimizer` (Optax `adam`) on a contrastive
(Hadsell-style) loss over every pair of a batch: same-class pairs are pulled together with `d ** 2`,
other pairs pushed out to a margin. The distance matrix is `jnp.linalg.norm(z[:, None] - z[None],
axis=-1)`, diagonal included; each example is a "positive pair" with itself at distance exactly 0.
The forward is fine (0 ** 2 = 0) but the derivative of the norm's `sqrt` at 0 is infinite and it is
multiplied by the zero cotangent of `d ** 2`: NaN in every gradient, and the training loop's
`assert jnp.isfinite(grad_norm)` fires on the first step.
"""
import flax.nnx as nnx
import jax
import jax.numpy as jnp
import numpy as np
import optax


class Embedder(nnx.Module):
    def __init__(self, in_dim, emb_dim, rngs):
        self.fc1 = nnx.Linear(in_dim, 64, rngs=rngs)
        self.fc2 = nnx.Linear(64, 64, rngs=rngs)
        self.out = nnx.Linear(64, emb_dim, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.fc1(x))
        h = nnx.relu(self.fc2(h))
        return self.out(h)


def contrastive_loss(model, x, labels, margin=2.0):
    z = model(x)
    dist = jnp.linalg.norm(z[:, None, :] - z[None, :, :], axis=-1)
    same = labels[:, None] == labels[None, :]
    pull = jnp.where(same, dist ** 2, 0.0)
    push = jnp.where(same, 0.0, jnp.maximum(margin - dist, 0.0) ** 2)
    return jnp.mean(pull + push)


@nnx.jit
def train_step(model, optimizer, x, labels):
    loss, grads = nnx.value_and_grad(contrastive_loss)(model, x, labels)
    optimizer.update(model, grads)
    return loss, optax.global_norm(grads)


def make_clusters(n_per_class, n_classes, dim, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 3.0, (n_classes, dim))
    x = np.concatenate([c + rng.normal(0.0, 1.0, (n_per_class, dim)) for c in centres])
    y = np.repeat(np.arange(n_classes), n_per_class)
    perm = rng.permutation(len(y))
    return jnp.asarray(x[perm], jnp.float32), jnp.asarray(y[perm])


def main():
    x, labels = make_clusters(n_per_class=16, n_classes=4, dim=10)
    model = Embedder(10, 8, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    for step in range(50):
        idx = jax.random.permutation(jax.random.PRNGKey(step), len(labels))[:32]
        loss, grad_norm = train_step(model, optimizer, x[idx], labels[idx])
        assert jnp.isfinite(grad_norm), f"step {step}: gradient norm is {grad_norm}"
        if step % 10 == 0:
            print(f"step {step}: contrastive loss {loss:.4f}")


if __name__ == "__main__":
    main()
