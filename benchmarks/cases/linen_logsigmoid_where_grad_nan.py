"""Origin: NaN in grad of log via jnp.log (a where-masked hand-written BCE at padded slots whose sigmoid saturates to exactly 0)
Fix: keep log's input in its domain with an inner where (jnp.log(jnp.where(mask > 0, prob, 1.0))), or use jax.nn.log_sigmoid / optax.sigmoid_binary_cross_entropy on the logits.

A Flax linen fraud tagger: each account's recent card transactions (amount, hour, merchant
category, distance from home) are padded to a fixed length, every transaction is embedded and
concatenated with a masked-mean summary of the account, and a per-transaction logit says "fraud".
So that padded slots are never flagged by the precision/recall metrics, the model pushes their
logits to -1e9 with an additive mask, and the hand-written binary cross-entropy drops them with
`jnp.where(mask > 0, labels * log(prob) + (1 - labels) * log(1 - prob), 0.0)`. The forward loss is
finite, but `sigmoid(-1e9)` is exactly 0, the derivative of `log` there is 0 / 0 = NaN, and the
`where` only multiplies it by a zero cotangent: the NaN reaches every weight through the unmasked
logits, and the training loop raises FloatingPointError on the first step.
"""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

MAX_TXNS, N_FEATURES, BATCH = 24, 6, 32


class FraudTagger(nn.Module):
    width: int = 64

    @nn.compact
    def __call__(self, txns, mask):
        h = nn.relu(nn.Dense(self.width)(txns))
        counts = jnp.maximum(jnp.sum(mask, axis=1, keepdims=True), 1.0)
        summary = jnp.sum(h * mask[..., None], axis=1) / counts
        summary = jnp.broadcast_to(summary[:, None, :], h.shape)
        h = nn.relu(nn.Dense(self.width)(jnp.concatenate([h, summary], axis=-1)))
        logits = nn.Dense(1)(h)[..., 0]
        return logits - 1e9 * (1.0 - mask)          # padded slots: never flagged


def make_accounts(n, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, MAX_TXNS + 1, n)
    mask = (np.arange(MAX_TXNS)[None, :] < lengths[:, None]).astype(np.float32)
    amount = np.log1p(rng.lognormal(3.0, 1.2, (n, MAX_TXNS)))
    hour = rng.integers(0, 24, (n, MAX_TXNS))
    category = rng.integers(0, 3, (n, MAX_TXNS))
    distance = rng.exponential(1.0, (n, MAX_TXNS))
    score = 0.8 * (amount - 3.5) + 1.5 * (hour < 5) + 1.2 * (distance > 2.5) - 2.5
    labels = (rng.uniform(size=score.shape) < 1 / (1 + np.exp(-score))).astype(np.float32)
    txns = np.stack([amount, np.sin(hour / 24 * 2 * np.pi), np.cos(hour / 24 * 2 * np.pi),
                     category == 1, category == 2, distance], axis=-1).astype(np.float32)
    return txns * mask[..., None], labels * mask, mask


def masked_bce(params, model, txns, labels, mask):
    prob = nn.sigmoid(model.apply({"params": params}, txns, mask))
    ll = labels * jnp.log(prob) + (1.0 - labels) * jnp.log(1.0 - prob)
    ll = jnp.where(mask > 0, ll, 0.0)
    return -jnp.sum(ll) / jnp.sum(mask)


def main():
    txns, labels, mask = make_accounts(512)
    model = FraudTagger()
    params = model.init(jax.random.PRNGKey(0), txns[:BATCH], mask[:BATCH])["params"]
    optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))
    opt_state = optimizer.init(params)

    @jax.jit
    def train_step(params, opt_state, txns, labels, mask):
        loss, grads = jax.value_and_grad(masked_bce)(params, model, txns, labels, mask)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss, optax.global_norm(grads)

    for epoch in range(3):
        for step, start in enumerate(range(0, len(labels), BATCH)):
            batch = (txns[start:start + BATCH], labels[start:start + BATCH], mask[start:start + BATCH])
            params, opt_state, loss, grad_norm = train_step(params, opt_state, *batch)
            if not np.isfinite(grad_norm):
                raise FloatingPointError(
                    f"epoch {epoch} step {step}: non-finite gradient norm {grad_norm} (loss {loss:.4f})")
        print(f"epoch {epoch}: masked BCE {loss:.4f}")


if __name__ == "__main__":
    main()
