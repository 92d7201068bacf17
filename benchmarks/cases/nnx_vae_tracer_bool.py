"""An autoencoder in Flax NNX trained with Optax; the training step applies a hand-written warm-up to the
KL weight and skips the update when the loss blows up, both inside the jitted step."""
import jax
import jax.numpy as jnp
import optax
from flax import nnx

LATENT, FEATURES = 2, 8
WARMUP_STEPS = 3
MAX_LOSS = 1e3


class VAE(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.encoder = nnx.Sequential(nnx.Linear(FEATURES, 16, rngs=rngs), nnx.relu)
        self.mean = nnx.Linear(16, LATENT, rngs=rngs)
        self.log_var = nnx.Linear(16, LATENT, rngs=rngs)
        self.decoder = nnx.Sequential(nnx.Linear(LATENT, 16, rngs=rngs), nnx.relu, nnx.Linear(16, FEATURES, rngs=rngs))
        self.rngs = rngs

    def __call__(self, x):
        h = self.encoder(x)
        mean, log_var = self.mean(h), self.log_var(h)
        z = mean + jnp.exp(0.5 * log_var) * jax.random.normal(self.rngs.noise(), mean.shape)
        return self.decoder(z), mean, log_var


def kl_weight(step):
    if step < WARMUP_STEPS:
        return step / WARMUP_STEPS
    return 1.0


def vae_loss(model, x, step):
    reconstruction, mean, log_var = model(x)
    rec = jnp.mean(jnp.sum((reconstruction - x) ** 2, axis=-1))
    kl = -0.5 * jnp.mean(jnp.sum(1 + log_var - mean ** 2 - jnp.exp(log_var), axis=-1))
    return rec + kl_weight(step) * kl


@nnx.jit
def train_step(model, optimizer, x, step):
    loss, grads = nnx.value_and_grad(vae_loss)(model, x, step)
    if loss < MAX_LOSS:
        optimizer.update(model, grads)
    return loss


def main():
    model = VAE(nnx.Rngs(params=0, noise=1))
    optimizer = nnx.Optimizer(model, optax.chain(optax.clip(1.0), optax.adam(1e-3)), wrt=nnx.Param)
    data = jax.random.normal(jax.random.key(5), (128, FEATURES))
    for step in range(6):
        batch = data[(step * 32) % 128:][:32]
        loss = train_step(model, optimizer, batch, jnp.asarray(step))
        print(f"step {step} loss {float(loss):.3f}")


if __name__ == "__main__":
    main()
