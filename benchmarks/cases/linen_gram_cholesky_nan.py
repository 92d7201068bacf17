"""Origin: NaN in forward of cholesky via jnp.linalg.cholesky of a rank-deficient feature Gram matrix
Fix: add the noise variance to the diagonal only: gram = phi @ phi.T + noise * jnp.eye(N_POINTS).
A deep-kernel Gaussian-process regressor: a Flax linen MLP maps 1-D inputs to an 8-dimensional
feature vector, the kernel is the linear kernel on those features, and the model is trained with
Optax on the exact GP negative log marginal likelihood computed through a Cholesky factor. The
user adds the learned noise variance as a scalar (to every entry) instead of to the diagonal, so
the 32x32 Gram matrix phi @ phi.T + noise stays rank-deficient (rank at most 9); the float32
Cholesky breaks down and JAX returns a NaN-filled factor, so the loss itself is NaN on the first
step and the training loop raises FloatingPointError.
"""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

N_POINTS, FEAT_DIM = 32, 8


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-3, 3, size=(N_POINTS, 1)), axis=0)
    y = np.sin(2.0 * x[:, 0]) + 0.3 * x[:, 0] + 0.1 * rng.normal(size=N_POINTS)
    return jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)


class FeatureNet(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.tanh(nn.Dense(32)(x))
        h = nn.tanh(nn.Dense(32)(h))
        return nn.Dense(FEAT_DIM)(h)


class DeepKernelGP(nn.Module):
    def setup(self):
        self.features = FeatureNet()
        self.log_noise = self.param("log_noise", lambda k: jnp.array(-2.0))

    def __call__(self, x, y):
        phi = self.features(x)
        noise = jnp.exp(self.log_noise)
        gram = phi @ phi.T + noise  # linear kernel on learned features + observation noise
        chol = jnp.linalg.cholesky(gram)
        alpha = jax.scipy.linalg.cho_solve((chol, True), y)
        data_fit = 0.5 * y @ alpha
        log_det = jnp.sum(jnp.log(jnp.diag(chol)))
        return (data_fit + log_det + 0.5 * N_POINTS * jnp.log(2 * jnp.pi)) / N_POINTS


x, y = make_data()
model = DeepKernelGP()
params = model.init(jax.random.PRNGKey(0), x, y)
tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-2))
opt_state = tx.init(params)


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(model.apply)(params, x, y)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


for i in range(20):
    params, opt_state, loss = train_step(params, opt_state, x, y)
    if not jnp.isfinite(loss):
        raise FloatingPointError(f"loss became {loss} at step {i}")
    if i % 5 == 0:
        print(f"step {i}: nll={float(loss):.4f}")
print("final nll", float(loss))
