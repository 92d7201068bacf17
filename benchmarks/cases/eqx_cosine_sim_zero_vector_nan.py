"""Origin: NaN in forward of div (0 / 0: the cosine similarity of the zero padding embedding)
Fix: divide by a norm kept away from zero (optax.safe_norm, or jnp.maximum(norm, eps)).

Item-similarity model (Equinox): learn item embeddings so that the cosine
similarity of co-purchased items is high.  Item id 0 is the padding item and
its embedding row is initialised to zeros.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax

NUM_ITEMS = 50
DIM = 16
PAD_ID = 0


class ItemEncoder(eqx.Module):
    embed: eqx.nn.Embedding
    proj: eqx.nn.Linear

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        embed = eqx.nn.Embedding(NUM_ITEMS, DIM, key=k1)
        # padding row starts at zero, like nn.Embedding(padding_idx=0)
        embed = eqx.tree_at(lambda e: e.weight, embed, embed.weight.at[PAD_ID].set(0.0))
        self.embed = embed
        self.proj = eqx.nn.Linear(DIM, DIM, use_bias=False, key=k2)

    def __call__(self, item_id):
        return self.proj(self.embed(item_id))


def cosine_similarity(a, b):
    return a @ b / (jnp.linalg.norm(a) * jnp.linalg.norm(b))


def loss_fn(model, left, right, label):
    def pair_sim(l, r):
        return cosine_similarity(model(l), model(r))

    sims = jax.vmap(pair_sim)(left, right)
    return jnp.mean((sims - label) ** 2)


@eqx.filter_jit
def train_step(model, opt_state, left, right, label, optimizer):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, left, right, label)
    updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    model = eqx.apply_updates(model, updates)
    return model, opt_state, loss, grads


def make_batch(key, batch_size=16):
    k1, k2, k3 = jax.random.split(key, 3)
    left = jax.random.randint(k1, (batch_size,), 1, NUM_ITEMS)
    right = jax.random.randint(k2, (batch_size,), 1, NUM_ITEMS)
    # the last pair of every batch is padded (ragged baskets)
    right = right.at[-1].set(PAD_ID)
    label = jax.random.bernoulli(k3, 0.5, (batch_size,)).astype(jnp.float32)
    return left, right, label


def main():
    key = jax.random.PRNGKey(0)
    model_key, data_key = jax.random.split(key)
    model = ItemEncoder(model_key)
    optimizer = optax.adam(1e-2)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))
    for step in range(3):
        data_key, sub = jax.random.split(data_key)
        left, right, label = make_batch(sub)
        model, opt_state, loss, grads = train_step(model, opt_state, left, right, label, optimizer)
        gnorm = optax.global_norm(eqx.filter(grads, eqx.is_array))
        print(f"step {step}: loss={float(loss):.5f} grad_norm={float(gnorm):.5f}")
        assert jnp.isfinite(loss), f"loss is not finite at step {step}: {loss}"
        assert jnp.isfinite(gnorm), f"gradient is not finite at step {step}: {gnorm}"
    print("done")


if __name__ == "__main__":
    main()
