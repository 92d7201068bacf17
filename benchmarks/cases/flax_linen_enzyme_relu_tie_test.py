"""A pytest-style test that Enzyme-JAX's gradients agree with JAX's for a Flax linen classifier of
bag-of-words features. Batches are zero-padded to a fixed size, the hidden layer's ReLU is written
`jnp.maximum(h, FLOOR)` with `FLOOR` a module-level array the loss closes over, and the labels are
an integer input of the differentiated function. A padded row has every pre-activation exactly 0 (the
bias starts at 0): at that tie JAX's derivative of `max` gives each side 1/2, Enzyme-JAX's gives
the first side 1, so the hidden bias's gradients differ and `assert_allclose` fails."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from enzyme_ad.jax import enzyme_jax_ir

VOCAB, HIDDEN, CLASSES, BATCH = 12, 16, 3, 6
FLOOR = jnp.zeros(HIDDEN)


class BagOfWords(nn.Module):
    @nn.compact
    def __call__(self, counts):
        h = nn.Dense(HIDDEN, name="hidden")(counts)
        h = jnp.maximum(h, FLOOR)
        return nn.Dense(CLASSES, name="out")(h)


def featurize(documents):
    rows = [np.bincount(doc, minlength=VOCAB).astype(np.float32) for doc in documents]
    rows += [np.zeros(VOCAB, np.float32)] * (BATCH - len(rows))
    return jnp.asarray(np.stack(rows))


def cross_entropy(params, model, counts, labels):
    logits = model.apply({"params": params}, counts)
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


def test_enzyme_gradients_match_jax():
    model = BagOfWords()
    documents = [[1, 4, 4, 7], [0, 2, 9], [3, 3, 5, 11, 8]]
    counts = featurize(documents)
    labels = jnp.array([0, 2, 1, 0, 0, 0], dtype=jnp.int32)
    params = model.init(jax.random.PRNGKey(0), counts)["params"]

    enzyme_loss = enzyme_jax_ir()(lambda p, c, y: cross_entropy(p, model, c, y))
    enzyme_grads = jax.jit(jax.grad(enzyme_loss))(params, counts, labels)
    jax_grads = jax.jit(jax.grad(cross_entropy), static_argnums=1)(params, model, counts, labels)

    flat_enzyme, _ = jax.tree_util.tree_flatten_with_path(enzyme_grads)
    for (path, got), want in zip(flat_enzyme, jax.tree_util.tree_leaves(jax_grads)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                   err_msg=jax.tree_util.keystr(path))


if __name__ == "__main__":
    test_enzyme_gradients_match_jax()
    print("ok")
