"""Origin: +inf in forward of log via jnp.log (of jax.nn.softmax(logits) that underflowed to 0)
Fix: use jax.nn.log_softmax(logits) instead of jnp.log(jax.nn.softmax(logits)).

A Flax linen MLP classifier of 8x8 grey-scale glyphs, trained with Optax `sgd` with momentum. The
pixels go in as raw 0..255 intensities (the `/ 255.0` was forgotten), so the logits at
initialisation differ by hundreds. The loss takes `jnp.log(jax.nn.softmax(logits))` rather than
`log_softmax`: where the true class trails the best one by more than ~104, its probability
underflows float32 to exactly 0, `log` gives -inf and the mean negative log-likelihood is +inf. The
training loop asserts the loss is finite.
"""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

N_CLASSES = 10


class GlyphClassifier(nn.Module):
    hidden: int = 128

    @nn.compact
    def __call__(self, x):
        x = x.reshape((x.shape[0], -1))
        x = nn.relu(nn.Dense(self.hidden)(x))
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(N_CLASSES)(x)


def nll_loss(params, images, labels):
    logits = GlyphClassifier().apply({"params": params}, images)
    log_probs = jnp.log(jax.nn.softmax(logits, axis=-1))
    picked = jnp.take_along_axis(log_probs, labels[:, None], axis=-1)[:, 0]
    return -jnp.mean(picked)


@jax.jit
def train_step(params, opt_state, images, labels):
    loss, grads = jax.value_and_grad(nll_loss)(params, images, labels)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def make_glyphs(n, seed=0):
    rng = np.random.default_rng(seed)
    templates = rng.uniform(0, 255, (N_CLASSES, 8, 8))
    labels = rng.integers(0, N_CLASSES, n)
    images = np.clip(templates[labels] + rng.normal(0, 40, (n, 8, 8)), 0, 255)
    return images.astype(np.float32), labels.astype(np.int32)


optimizer = optax.sgd(learning_rate=1e-3, momentum=0.9)

if __name__ == "__main__":
    images, labels = make_glyphs(512)
    params = GlyphClassifier().init(jax.random.PRNGKey(0), images[:1])["params"]
    opt_state = optimizer.init(params)
    for epoch in range(5):
        for i in range(0, len(labels), 128):
            params, opt_state, loss = train_step(params, opt_state, images[i:i + 128],
                                                 labels[i:i + 128])
            assert jnp.isfinite(loss), f"epoch {epoch}, batch {i // 128}: loss = {loss}"
        print(f"epoch {epoch}: loss {loss:.4f}")
