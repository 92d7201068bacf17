"""Train a small Equinox point-regression model on padded trajectories.

Each trajectory has a variable number of 2-D points; batches are padded to a
fixed length and a mask marks the real points.  The loss is the mean
Euclidean distance between predicted and target displacements.
"""
import jax
import jax.numpy as jnp
import equinox as eqx
import optax

MAX_LEN = 8
N_TRAJ = 32
FEAT = 4


class DisplacementMLP(eqx.Module):
    """Predicts a 2-D displacement for every point of a trajectory."""
    layers: list

    def __init__(self, key, hidden=32):
        k1, k2, k3 = jax.random.split(key, 3)
        self.layers = [eqx.nn.Linear(FEAT, hidden, key=k1),
                       eqx.nn.Linear(hidden, hidden, key=k2),
                       eqx.nn.Linear(hidden, 2, key=k3)]

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = jax.nn.gelu(layer(x))
        return self.layers[-1](x)


def make_dataset(key):
    """Random trajectories, padded with zeros up to MAX_LEN."""
    kx, kw, kl = jax.random.split(key, 3)
    feats = jax.random.normal(kx, (N_TRAJ, MAX_LEN, FEAT))
    true_w = jax.random.normal(kw, (FEAT, 2)) * 0.5
    targets = jnp.tanh(feats @ true_w)
    lengths = jax.random.randint(kl, (N_TRAJ,), 3, MAX_LEN + 1)
    mask = (jnp.arange(MAX_LEN)[None, :] < lengths[:, None]).astype(jnp.float32)
    return feats * mask[..., None], targets * mask[..., None], mask


@eqx.filter_value_and_grad
def loss_fn(model, feats, targets, mask):
    preds = jax.vmap(jax.vmap(model))(feats)
    preds = preds * mask[..., None]          # zero out padded positions
    dist = jnp.linalg.norm(preds - targets, axis=-1)
    return jnp.sum(dist * mask) / jnp.sum(mask)


@eqx.filter_jit
def train_step(model, opt_state, feats, targets, mask):
    loss, grads = loss_fn(model, feats, targets, mask)
    updates, opt_state = optim.update(grads, opt_state, model)
    model = eqx.apply_updates(model, updates)
    return model, opt_state, loss, grads


def grads_finite(grads):
    leaves = jax.tree_util.tree_leaves(eqx.filter(grads, eqx.is_array))
    return all(bool(jnp.all(jnp.isfinite(g))) for g in leaves)


optim = optax.adam(1e-3)

if __name__ == "__main__":
    key = jax.random.PRNGKey(0)
    dkey, mkey = jax.random.split(key)
    feats, targets, mask = make_dataset(dkey)
    print(f"dataset: {feats.shape}, real points = {int(mask.sum())}")
    model = DisplacementMLP(mkey)
    opt_state = optim.init(eqx.filter(model, eqx.is_array))
    for step in range(1, 51):
        model, opt_state, loss, grads = train_step(model, opt_state, feats, targets, mask)
        if step % 10 == 0 or step == 1:
            print(f"step {step:3d}  loss {float(loss):.4f}")
        if not grads_finite(grads):
            raise SystemExit(f"non-finite gradients at step {step} (loss={float(loss):.4f})")
    print("training finished")
