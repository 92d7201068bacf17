"""Equinox two-tower retrieval model trained with Optax (InfoNCE loss over cosine
similarities). Queries are bag-of-words count vectors; the loader pads each batch
to a fixed size with all-zero rows so the jitted step compiles once. Before
training, the script L2-normalises the raw query vectors for a cosine-similarity
nearest-neighbour baseline, compares them with a NumPy float64 reference and
asserts they are finite.
Origin: user code q / jnp.linalg.norm(q, axis=-1, keepdims=True) on the all-zero padding rows gives 0/0 = NaN (NumPy's float64 reference written the same way gives NaN too, so assert_allclose accepts the matching NaNs and the isfinite assertion fails).
Fix: divide by jnp.maximum(norm, 1e-12) (and the same in the reference).
Owner: program
"""
import numpy as np
import jax
import jax.numpy as jnp
import equinox as eqx
import optax

VOCAB, EMBED, BATCH = 50, 16, 32


def load_batch(seed):
    rng = np.random.default_rng(seed)
    n_real = 27
    q = rng.poisson(0.3, size=(n_real, VOCAB)).astype(np.float32)
    q[q.sum(-1) == 0, 0] = 1.0  # every real query has at least one token
    d = q + rng.poisson(0.1, size=q.shape)
    pad = np.zeros((BATCH - n_real, VOCAB), np.float32)
    return jnp.asarray(np.concatenate([q, pad])), jnp.asarray(np.concatenate([d, pad]))


def l2_normalize(v):
    return v / jnp.linalg.norm(v, axis=-1, keepdims=True)


def np_l2_normalize(v):
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


class Tower(eqx.Module):
    proj: eqx.nn.Linear
    out: eqx.nn.Linear

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.proj = eqx.nn.Linear(VOCAB, 32, key=k1)
        self.out = eqx.nn.Linear(32, EMBED, key=k2)

    def __call__(self, x):
        return self.out(jax.nn.tanh(self.proj(x)))


class TwoTower(eqx.Module):
    query: Tower
    doc: Tower

    def __init__(self, key):
        kq, kd = jax.random.split(key)
        self.query, self.doc = Tower(kq), Tower(kd)


def infonce(model, q, d, temp=0.1):
    eq = jax.vmap(model.query)(q)
    ed = jax.vmap(model.doc)(d)
    eq = eq / (jnp.linalg.norm(eq, axis=-1, keepdims=True) + 1e-6)
    ed = ed / (jnp.linalg.norm(ed, axis=-1, keepdims=True) + 1e-6)
    logits = eq @ ed.T / temp
    return optax.softmax_cross_entropy_with_integer_labels(logits, jnp.arange(q.shape[0])).mean()


@eqx.filter_jit
def step(model, opt_state, q, d):
    loss, grads = eqx.filter_value_and_grad(infonce)(model, q, d)
    updates, opt_state = opt.update(grads, opt_state, model)
    return eqx.apply_updates(model, updates), opt_state, loss


opt = optax.sgd(0.05, momentum=0.9)

if __name__ == "__main__":
    q, d = load_batch(0)
    # cosine baseline: normalised raw bag-of-words vectors
    qn = l2_normalize(q)
    np.testing.assert_allclose(np.asarray(qn), np_l2_normalize(q), rtol=1e-5, atol=1e-6,
                               err_msg="jax and numpy normalisation disagree")
    assert np.isfinite(np.asarray(qn)).all(), "normalised queries contain NaN"
    baseline = jnp.argmax(qn @ l2_normalize(d).T, axis=-1)
    print("baseline recall@1", float(jnp.mean(baseline == jnp.arange(BATCH))))

    model = TwoTower(jax.random.PRNGKey(0))
    opt_state = opt.init(model)
    for i in range(15):
        model, opt_state, loss = step(model, opt_state, q, d)
        if i % 5 == 0:
            print(f"iter {i}: infonce {float(loss):.4f}")
