import jax
import jax.numpy as jnp
import equinox as eqx
import optax

N_FREQ = 64
N_FRAMES = 48
BATCH = 8
HIDDEN = 128
COMPRESS = 0.3


class GainNet(eqx.Module):
    proj_in: eqx.nn.Linear
    hidden: eqx.nn.Linear
    proj_out: eqx.nn.Linear

    def __init__(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.proj_in = eqx.nn.Linear(N_FREQ, HIDDEN, key=k1)
        self.hidden = eqx.nn.Linear(HIDDEN, HIDDEN, key=k2)
        self.proj_out = eqx.nn.Linear(HIDDEN, N_FREQ, key=k3)

    def __call__(self, frame_mag):
        h = jnp.log1p(frame_mag)
        h = jax.nn.gelu(self.proj_in(h))
        h = jax.nn.gelu(self.hidden(h)) + h
        return jax.nn.sigmoid(self.proj_out(h))


def make_batch(key):
    k_spec, k_noise, k_len = jax.random.split(key, 3)
    clean = jnp.abs(jax.random.normal(k_spec, (BATCH, N_FRAMES, N_FREQ))) * 2.0
    noise = jnp.abs(jax.random.normal(k_noise, (BATCH, N_FRAMES, N_FREQ))) * 0.5
    lengths = jax.random.randint(k_len, (BATCH,), N_FRAMES // 2, N_FRAMES + 1)
    frame_mask = jnp.arange(N_FRAMES)[None, :] < lengths[:, None]
    clean = jnp.where(frame_mask[..., None], clean, 0.0)
    noisy = jnp.where(frame_mask[..., None], clean + noise, 0.0)
    return noisy, clean, frame_mask


def compressed_spectral_loss(model, noisy, clean, frame_mask):
    gains = jax.vmap(jax.vmap(model))(noisy)
    enhanced = gains * noisy
    mask = jnp.broadcast_to(frame_mask[..., None], enhanced.shape)
    est_c = jnp.where(mask, jnp.power(enhanced, COMPRESS), 0.0)
    ref_c = jnp.where(mask, jnp.power(clean, COMPRESS), 0.0)
    err = jnp.square(est_c - ref_c)
    return jnp.sum(err) / jnp.maximum(jnp.sum(mask), 1)


def build_optimizer():
    return optax.chain(
        optax.clip_by_global_norm(1.0),
        optax.adam(learning_rate=3e-4),
    )


optimizer = build_optimizer()


@eqx.filter_jit
def compute_grads(model, noisy, clean, frame_mask):
    return eqx.filter_value_and_grad(compressed_spectral_loss)(
        model, noisy, clean, frame_mask
    )


@eqx.filter_jit
def apply_update(model, grads, opt_state):
    updates, opt_state = optimizer.update(
        grads, opt_state, eqx.filter(model, eqx.is_array)
    )
    return eqx.apply_updates(model, updates), opt_state


def main():
    key = jax.random.PRNGKey(0)
    model_key, data_key = jax.random.split(key)
    model = GainNet(model_key)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))

    for step in range(30):
        data_key, sub = jax.random.split(data_key)
        noisy, clean, frame_mask = make_batch(sub)
        loss, grads = compute_grads(model, noisy, clean, frame_mask)
        assert jnp.isfinite(loss), f"non-finite loss at step {step}"
        for g in jax.tree_util.tree_leaves(eqx.filter(grads, eqx.is_array)):
            assert jnp.all(jnp.isfinite(g)), f"non-finite gradient at step {step}"
        model, opt_state = apply_update(model, grads, opt_state)
        if step % 5 == 0:
            print(f"step {step:3d}  loss {float(loss):.5f}")

    print("done")


if __name__ == "__main__":
    main()
